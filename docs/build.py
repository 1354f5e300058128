"""Build the docs: ``python docs/build.py`` writes one HTML page per docs/*.md into docs/_build/.

Uses the ``markdown`` package (with its tables and fenced_code extensions) when it is installed,
otherwise a small stdlib converter that knows what these pages use: headings, paragraphs, lists,
fenced code, tables, inline code, emphasis, links and images.  Links to ``page.md`` become
``page.html``; images under docs/ (``img/*.svg``) are copied next to the pages.
Exit status 1 if a page links to a .md page that does not exist, or if a page or the README
refers to a local file or image that does not exist or to a heading anchor another .md file
does not have (``../README.md#benchmarks``).
"""
import html
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "_build")
ORDER = ["index", "patching", "api", "cowdict", "buffers-cuda", "semantics", "real-world"]

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title} - fastcopy</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; }}
nav a {{ margin-right: 1rem; }} pre {{ background: #f4f4f4; padding: .6rem; overflow-x: auto; }}
code {{ background: #f4f4f4; }} table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: .2rem .5rem; text-align: left; }}
</style></head>
<body><nav>{nav}</nav><hr>
{body}
</body></html>
"""


# ------------------------------------------------------------------ stdlib fallback converter

def _inline(text):
    parts = re.split(r"(`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append("<code>%s</code>" % html.escape(part[1:-1]))
            continue
        part = html.escape(part, quote=False)
        part = re.sub(r"!\[([^\]]*)\]\(([^)\s]+)\)", r'<img src="\2" alt="\1">', part)
        part = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', part)
        part = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", part)
        part = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", part)
        out.append(part)
    return "".join(out)


def _table(rows):
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    head, body = cells[0], cells[2:]
    out = ["<table><thead><tr>"] + ["<th>%s</th>" % _inline(c) for c in head]
    out.append("</tr></thead><tbody>")
    for r in body:
        out.append("<tr>" + "".join("<td>%s</td>" % _inline(c) for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def fallback_markdown(text):
    lines = text.splitlines()
    out, para, i = [], [], 0

    def flush():
        if para:
            out.append("<p>%s</p>" % _inline(" ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre><code>%s</code></pre>" % html.escape("\n".join(lines[i + 1:j])))
            i = j + 1
            continue
        m = re.match(r"(#{1,6})\s+(.*)", line)
        if line.startswith("<!--") and line.rstrip().endswith("-->"):
            flush()
            out.append(line)                       # a comment stays a comment
        elif m:
            flush()
            n = len(m.group(1))
            out.append("<h%d>%s</h%d>" % (n, _inline(m.group(2)), n))
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"\|[\s:|-]+\|?$", lines[i + 1]):
            flush()
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out.append(_table(lines[i:j]))
            i = j
            continue
        elif re.match(r"\s*([-*]|\d+\.)\s", line):
            flush()
            tag = "ol" if re.match(r"\s*\d+\.", line) else "ul"
            items = []
            while i < len(lines) and lines[i].strip():
                if re.match(r"\s*([-*]|\d+\.)\s", lines[i]):
                    items.append(re.sub(r"^\s*([-*]|\d+\.)\s+", "", lines[i]))
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<%s>%s</%s>" % (tag, "".join("<li>%s</li>" % _inline(t) for t in items), tag))
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line.strip())
        i += 1
    flush()
    return "\n".join(out)


def to_html(text):
    try:
        import markdown
    except ImportError:
        return fallback_markdown(text)
    return markdown.markdown(text, extensions=["tables", "fenced_code"])


# ------------------------------------------------------------------ references

# [text](target) and ![alt](target) outside code; <img src="target">
_REF = re.compile(r"(!?)\[[^\]]*\]\(([^)\s]+)\)|<img\s[^>]*?src=\"([^\"]+)\"")


def _unfenced(text):
    """``text`` with fenced code blocks blanked."""
    return re.sub(r"(?ms)^```.*?^```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _prose(text):
    """``text`` with fenced blocks and inline code blanked (they hold example links)."""
    return re.sub(r"`[^`\n]+`", lambda m: " " * len(m.group(0)), _unfenced(text))


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    h = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip())
    return re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        return {slug(h) for h in re.findall(r"(?m)^#{1,6}\s+(.*?)\s*#*$", _unfenced(f.read()))}


def check_refs(path):
    """Problems with the local links and images of the Markdown file ``path``: a target file
    that does not exist, or an anchor the target .md file (or the page itself) does not have.
    Remote (``scheme:``) targets are not fetched."""
    with open(path, encoding="utf-8") as f:
        text = _prose(f.read())
    problems, here = [], os.path.dirname(path)
    for m in _REF.finditer(text):
        image = bool(m.group(1) or m.group(3))
        target = m.group(2) or m.group(3)
        if re.match(r"[a-z][\w+.-]*:", target):
            continue
        name, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(here, name)) if name else path
        what = "image" if image else "link"
        if not os.path.exists(dest):
            problems.append("%s: %s %s: no such file" % (os.path.relpath(path, ROOT), what,
                                                          target))
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append("%s: %s %s: %s has no heading #%s"
                            % (os.path.relpath(path, ROOT), what, target,
                               os.path.relpath(dest, ROOT), anchor))
    return problems


def images(path):
    """Local image files ``path`` refers to, as paths relative to docs/ (only those inside)."""
    with open(path, encoding="utf-8") as f:
        text = _prose(f.read())
    out = []
    for m in _REF.finditer(text):
        target = m.group(2) if m.group(1) else m.group(3)
        if not target or re.match(r"[a-z][\w+.-]*:", target):
            continue
        rel = os.path.relpath(os.path.normpath(os.path.join(os.path.dirname(path), target)),
                              HERE)
        if not rel.startswith("..") and os.path.isfile(os.path.join(HERE, rel)):
            out.append(rel)
    return out


# ------------------------------------------------------------------ build

def pages():
    names = [f[:-3] for f in os.listdir(HERE) if f.endswith(".md")]
    return [n for n in ORDER if n in names] + sorted(n for n in names if n not in ORDER)


def build(out=OUT):
    names = pages()
    os.makedirs(out, exist_ok=True)
    nav = " ".join('<a href="%s.html">%s</a>' % (n, n) for n in names)
    broken = []
    for name in names:
        with open(os.path.join(HERE, name + ".md"), encoding="utf-8") as f:
            text = f.read()
        for target in re.findall(r"\]\(([\w.-]+)\.md(?:#[\w-]*)?\)", text):
            if target not in names:
                broken.append("%s.md -> %s.md" % (name, target))
        text = re.sub(r"\]\(([\w.-]+)\.md(#[\w-]*)?\)", r"](\1.html\2)", text)
        m = re.search(r"^#\s+(.*)$", text, re.M)
        title = m.group(1) if m else name
        with open(os.path.join(out, name + ".html"), "w", encoding="utf-8") as f:
            f.write(PAGE.format(title=html.escape(title), nav=nav, body=to_html(text)))
        path = os.path.join(HERE, name + ".md")
        broken += check_refs(path)
        for rel in images(path):
            os.makedirs(os.path.dirname(os.path.join(out, rel)) or out, exist_ok=True)
            shutil.copyfile(os.path.join(HERE, rel), os.path.join(out, rel))
    broken += check_refs(os.path.join(ROOT, "README.md"))
    return names, broken


def main(argv=None):
    names, broken = build()
    print("wrote %d pages to %s" % (len(names), os.path.relpath(OUT)))
    for b in broken:
        print("broken reference:", b, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
