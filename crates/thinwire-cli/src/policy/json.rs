//! The one-line JSON both policies print with `--json`.

use serde::Serialize;

/// One-line JSON with a space after every `:` and `,` (the published form:
/// `{"packets": 4, "stages": 2, ...}`).
struct SpacedFormatter;

impl serde_json::ser::Formatter for SpacedFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `", "` before every array element and object key but the first.
fn separator<W: ?Sized + std::io::Write>(writer: &mut W, first: bool) -> std::io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

/// `value` as one line of spaced JSON, with a trailing newline.
pub(super) fn spaced_json<T: Serialize>(value: &T) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, SpacedFormatter);
    // Plain structs with finite floats always serialize, and serde_json writes UTF-8.
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    let mut s = String::from_utf8(buf).unwrap_or_default();
    s.push('\n');
    s
}
