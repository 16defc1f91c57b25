#!/bin/sh
# check-report-width.sh REPORT.html... : do thinwire's HTML reports fit a 1,400 px window?
#
# Opens every report in headless Chromium at 1400 x 1000 px with a small script added (in a
# temporary copy; the report itself has no script) that measures, after layout:
#   * the page: document.documentElement.scrollWidth must not exceed the window's width;
#   * every table: its container (the kit's scrolling wrapper, or the page column) must not
#     need to scroll (scrollWidth <= clientWidth), and the table must end inside the page
#     column;
#   * every figure's SVG: it must end inside the page column.
# Prints one line per report (OK, or every overflow found, named by the heading above it)
# and exits 1 if any report overflows, 2 on a usage or tool error.
#
# Needs Chromium (Debian: `apt-get install -y chromium`; the binary is found as $CHROMIUM,
# chromium or chromium-browser) and python3. Not run in CI: installing Chromium is heavy.
# Run it by hand after changing the report kit's style sheet or a report's tables, e.g.:
#   thinwire lab run --out /tmp/r && tools/check-report-width.sh /tmp/r/report.html
# WIDTH overrides the window width (default 1400).

set -u

if [ "$#" -eq 0 ]; then
    echo "usage: $0 REPORT.html..." >&2
    exit 2
fi
width="${WIDTH:-1400}"
chromium="${CHROMIUM:-}"
if [ -z "$chromium" ]; then
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null 2>&1; then
            chromium="$c"
            break
        fi
    done
fi
if [ -z "$chromium" ]; then
    echo "$0: no Chromium found (apt-get install -y chromium, or set CHROMIUM)" >&2
    exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/measure.js" <<'EOF'
<script>
(function () {
  var W = window.innerWidth;
  var bad = [];
  var near = function (el) {
    // The nearest heading or caption before el, to name it.
    var cap = el.querySelector && el.querySelector("caption");
    if (cap) return cap.textContent.trim();
    var all = Array.prototype.slice.call(document.querySelectorAll("h1, h2, h3, figure"));
    var name = "(top)";
    all.forEach(function (h) {
      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) {
        name = h.id ? "#" + h.id : h.textContent.trim().slice(0, 60);
      }
    });
    return name;
  };
  var column = document.querySelector("main") || document.body;
  var cs = getComputedStyle(column);
  var right = column.getBoundingClientRect().right - parseFloat(cs.paddingRight);
  var page = document.documentElement.scrollWidth;
  if (page > W) bad.push("page: " + page + " px wide in a " + W + " px window");
  var tables = document.querySelectorAll("table");
  tables.forEach(function (t) {
    var c = t.parentElement;
    if (c.scrollWidth > c.clientWidth + 1) {
      bad.push("table after " + near(t) + ": " + c.scrollWidth + " px in a " + c.clientWidth +
               " px container");
    } else if (t.getBoundingClientRect().right > right + 1) {
      bad.push("table after " + near(t) + ": ends at " + Math.round(t.getBoundingClientRect().right) +
               " px, past the page column (" + Math.round(right) + " px)");
    }
  });
  document.querySelectorAll("figure svg").forEach(function (s) {
    if (s.getBoundingClientRect().right > right + 1) {
      bad.push("figure " + near(s) + ": ends past the page column");
    }
  });
  var out = document.createElement("pre");
  out.id = "width-check";
  out.textContent = "WIDTH-CHECK window=" + W + " tables=" + tables.length + "\n" + bad.join("\n");
  document.body.appendChild(out);
})();
</script>
EOF

status=0
i=0
for report in "$@"; do
    i=$((i + 1))
    if [ ! -f "$report" ]; then
        echo "$report: no such file" >&2
        status=2
        continue
    fi
    copy="$tmp/report-$i.html"
    python3 - "$report" "$tmp/measure.js" "$copy" <<'EOF'
import sys
html = open(sys.argv[1], encoding="utf-8").read()
script = open(sys.argv[2], encoding="utf-8").read()
at = html.rfind("</body>")
at = len(html) if at < 0 else at
open(sys.argv[3], "w", encoding="utf-8").write(html[:at] + script + html[at:])
EOF
    "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/profile-$i" --window-size="$width,1000" \
        --run-all-compositor-stages-before-draw --virtual-time-budget=3000 \
        --dump-dom "file://$(realpath "$copy")" >"$tmp/dom-$i.html" 2>"$tmp/err-$i.txt"
    result="$(python3 - "$tmp/dom-$i.html" <<'EOF'
import html, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<pre id="width-check">(.*?)</pre>', dom, re.S)
print(html.unescape(m.group(1)) if m else "")
EOF
)"
    case "$result" in
    "WIDTH-CHECK window=$width "*) ;;
    *)
        echo "$report: no measurement (chromium: $(tail -n 1 "$tmp/err-$i.txt"))" >&2
        status=2
        continue
        ;;
    esac
    head="$(printf '%s\n' "$result" | head -n 1)"
    problems="$(printf '%s\n' "$result" | tail -n +2)"
    tables="${head##*tables=}"
    if [ -z "$problems" ]; then
        echo "$report: OK ($tables tables fit ${width} px)"
    else
        echo "$report: OVERFLOW at ${width} px"
        printf '%s\n' "$problems" | sed 's/^/  /'
        [ "$status" -eq 0 ] && status=1
    fi
done
exit "$status"
