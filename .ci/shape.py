#!/usr/bin/env python3
"""Shape checks for thinwire crates: file and function sizes, argument counts, import loops.

Usage: python3 shape.py CRATE_DIR [CRATE_DIR ...]   (e.g. crates/thinwire-lab)

Reports, outside tests (files named tests.rs, folders named tests/, and `#[cfg(test)] mod` blocks):
  - files over 600 lines,
  - functions over 100 lines (from the `fn` line to its closing brace),
  - functions with more than 6 arguments (`self` not counted),
  - import loops between files (modules), and between the top-level folders of a crate,
    where a parent module using its own children does not count,
  - a second varint codec (issue 26): a file outside thinwire-proto's `codec` module that
    defines a `fn varint` / `fn write_varint` or uses a QUIC varint length mask (0x4000,
    0x8000_0000, 0xc000_0000_0000_0000); every crate encodes and reads varints with
    `thinwire_proto::codec` instead,
  - a second HTML escape: code outside the report kit (crates/thinwire-report) that turns
    '&' into "&amp;" (a match arm `'&' => ..."&amp;"` or a `.replace('&', "&amp;")`); every
    report escapes with `thinwire_report::escape` instead.
Exit status 1 if anything is reported.
"""
import os
import re
import sys

MAX_FILE = 600
MAX_FN = 100
MAX_ARGS = 6


def strip_code(text):
    """Blank out comments, strings and char literals, keeping newlines and braces of code only."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 20]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def match_close(code, start, open_ch, close_ch):
    depth = 0
    for k in range(start, len(code)):
        if code[k] == open_ch:
            depth += 1
        elif code[k] == close_ch:
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def test_ranges(code):
    """Character ranges of `#[cfg(test)] mod x { ... }` blocks."""
    ranges = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        b = m.end() - 1
        ranges.append((m.start(), match_close(code, b, "{", "}")))
    return ranges


def count_args(sig):
    depth, parts, cur = 0, [], ""
    for ch in sig:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    parts = [p.strip() for p in parts if p.strip()]
    parts = [p for p in parts if not re.match(r"^(&\s*('\w+\s+)?)?(mut\s+)?self\b", p)]
    return len(parts)


FN_RE = re.compile(r"\bfn\s+(\w+)\s*(<[^({]*?>)?\s*\(")


def check_functions(path, code, problems):
    tests = test_ranges(code)
    for m in FN_RE.finditer(code):
        if any(a <= m.start() <= b for a, b in tests):
            continue
        po = m.end() - 1
        pc = match_close(code, po, "(", ")")
        args = count_args(code[po + 1:pc].replace("->", "  "))
        line = code.count("\n", 0, m.start()) + 1
        if args > MAX_ARGS:
            problems.append(f"{path}:{line}: fn {m.group(1)} has {args} arguments (> {MAX_ARGS})")
        # body: first '{' or ';' after the signature, at depth 0 of parens
        k = pc + 1
        while k < len(code) and code[k] not in "{;":
            k += 1
        if k >= len(code) or code[k] == ";":
            continue
        end = match_close(code, k, "{", "}")
        length = code.count("\n", m.start(), end) + 1
        if length > MAX_FN:
            problems.append(f"{path}:{line}: fn {m.group(1)} is {length} lines (> {MAX_FN})")


# The one varint codec (issue 26): thinwire-proto's `codec` module.
VARINT_HOME = os.path.join("thinwire-proto", "src", "codec")
# A QUIC varint length mask (2-, 4- or 8-byte form, any case and digit grouping), or a function
# named like a varint encoder or decoder.
VARINT_MASK_RE = re.compile(r"\b0x(?:4000|8000_?0000|c000(?:_?0000){3})(?:_?u(?:16|32|64))?\b", re.I)
VARINT_FN_RE = re.compile(r"\bfn\s+(?:(?:write|read|encode|decode|put|get)_)?varint\w*\b")


def check_varint_codec(path, code, problems):
    """Report varint codecs outside thinwire-proto's `codec` module (tests excluded)."""
    if VARINT_HOME in os.path.normpath(os.path.abspath(path)):
        return
    tests = test_ranges(code)
    for rx, what in ((VARINT_MASK_RE, "a varint length mask"), (VARINT_FN_RE, "a varint function")):
        for m in rx.finditer(code):
            if any(a <= m.start() <= b for a, b in tests):
                continue
            line = code.count("\n", 0, m.start()) + 1
            problems.append(
                f"{path}:{line}: {what} ({m.group(0).strip()}): a second varint codec; "
                "use thinwire_proto::codec"
            )


# The one HTML escape: the report kit's.
ESCAPE_HOME = os.path.join("thinwire-report", "src")
# '&' (or "&", b'&') mapped to "&amp;" in the same statement: a match arm or a replace call.
ESCAPE_RE = re.compile(r"b?['\"]&['\"]\s*(?:=>|,)[^;\n]*?\"&amp;\"")


def check_html_escape(path, text, code, problems):
    """Report HTML escapes outside the report kit (tests excluded).

    `text` is the file as written (the pattern is in literals); `code` the same text with
    comments and literals blanked, position for position, which tells code from comments."""
    if ESCAPE_HOME in os.path.normpath(os.path.abspath(path)):
        return
    tests = test_ranges(code)
    for m in ESCAPE_RE.finditer(text):
        if any(a <= m.start() <= b for a, b in tests):
            continue
        if not re.search(r"=>|,", code[m.start():m.end()]):
            continue  # in a comment
        line = text.count("\n", 0, m.start()) + 1
        problems.append(
            f"{path}:{line}: an HTML escape ('&' to \"&amp;\"): a second HTML escape; "
            "use thinwire_report::escape"
        )


def is_test_file(rel):
    parts = rel.split(os.sep)
    return "tests" in parts[:-1] or parts[-1] == "tests.rs" or "benches" in parts or "fuzz" in parts


def module_of(src_rel):
    """crate-relative module path of a file under src/ (a tuple)."""
    p = src_rel[:-3].split(os.sep)
    if p[-1] in ("lib", "main"):
        p = p[:-1]
    elif p[-1] == "mod":
        p = p[:-1]
    return tuple(p)


def use_paths(code):
    """Yield path tuples referenced from code: `use` trees expanded, plus inline crate::/super:: paths."""
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        paths.extend(expand_use(re.sub(r"\s+", "", m.group(1))))
    for m in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", code):
        paths.append(m.group(1).split("::"))
    return paths


def expand_use(tree):
    """Expand `a::{b::c, d}` into [[a,b,c],[a,d]]."""
    if "{" not in tree:
        return [tree.split(" as ")[0].split("::")]
    i = tree.index("{")
    prefix = [p for p in tree[:i].split("::") if p]
    inner = tree[i + 1:match_close(tree, i, "{", "}")]
    depth, cur, items = 0, "", []
    for ch in inner:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for it in items:
        if not it:
            continue
        for sub in expand_use(it):
            out.append(prefix + [s for s in sub if s])
    return out


def resolve(path, here, modules, reexports):
    """Module (tuple) a path refers to, or None if outside the crate."""
    if not path:
        return None
    if path[0] == "crate":
        base, rest = (), path[1:]
    elif path[0] in ("super", "self"):
        base = here
        rest = list(path)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    mod = base
    for seg in rest:
        if mod + (seg,) in modules:
            mod = mod + (seg,)
        else:
            # an item: follow one level of `pub use child::Item` re-exports
            target = reexports.get(mod, {}).get(seg)
            if target is not None:
                return target
            break
    return mod


def crate_graph(crate_dir):
    src = os.path.join(crate_dir, "src")
    files = {}
    for root, _, names in os.walk(src):
        for f in names:
            if f.endswith(".rs"):
                full = os.path.join(root, f)
                rel = os.path.relpath(full, src)
                if is_test_file(rel):
                    continue
                files[module_of(rel)] = full
    modules = set(files)
    codes = {}
    for mod, full in files.items():
        code = strip_code(open(full, encoding="utf-8").read())
        for a, b in reversed(test_ranges(code)):
            code = code[:a] + code[b + 1:]
        codes[mod] = code
    reexports = {}
    for mod, code in codes.items():
        for m in re.finditer(r"\bpub(\([^)]*\))?\s+use\s+([^;]+);", code):
            for p in expand_use(re.sub(r"\s+", "", m.group(2))):
                if not p:
                    continue
                if p[0] in ("self",):
                    p = p[1:]
                if p and (mod + (p[0],)) in modules:
                    target = mod + (p[0],)
                    for seg in p[1:-1]:
                        if target + (seg,) in modules:
                            target = target + (seg,)
                    reexports.setdefault(mod, {})[p[-1]] = target
    edges = {m: set() for m in modules}
    for mod, code in codes.items():
        for p in use_paths(code):
            t = resolve(p, mod, modules, reexports)
            if t is None or t == mod:
                continue
            if t[:len(mod)] == mod:  # a parent using its own descendants
                continue
            edges[mod].add(t)
    return files, edges


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def name(mod):
    return "::".join(mod) or "crate"


def main():
    problems = []
    for crate in sys.argv[1:]:
        for root, dirs, names in os.walk(crate):
            dirs[:] = [d for d in dirs if d not in ("target", "fuzz")]
            for f in names:
                if not f.endswith(".rs"):
                    continue
                full = os.path.join(root, f)
                rel = os.path.relpath(full, crate)
                text = open(full, encoding="utf-8").read()
                if is_test_file(rel):
                    continue
                lines = text.count("\n")
                if lines > MAX_FILE:
                    problems.append(f"{full}: {lines} lines (> {MAX_FILE})")
                code = strip_code(text)
                check_functions(full, code, problems)
                check_varint_codec(full, code, problems)
                check_html_escape(full, text, code, problems)
        if os.path.isdir(os.path.join(crate, "src")):
            files, edges = crate_graph(crate)
            for comp in sccs(sorted(edges), edges):
                problems.append(f"{crate}: import loop between files: " + " <-> ".join(name(m) for m in sorted(comp)))
            top = {}
            for a, ts in edges.items():
                for b in ts:
                    if a and b and a[0] != b[0]:
                        top.setdefault(a[0], set()).add(b[0])
            for comp in sccs(sorted(top), top):
                problems.append(f"{crate}: import loop between folders: " + " <-> ".join(sorted(comp)))
    for p in problems:
        print(p)
    print(f"shape: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
