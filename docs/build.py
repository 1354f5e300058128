"""Build the docs: ``python docs/build.py`` writes one HTML page per docs/*.md into docs/_build/.

Uses the ``markdown`` package (with its tables and fenced_code extensions) when it is installed,
otherwise a small stdlib converter that knows what these pages use: headings, paragraphs, lists,
fenced code, tables, inline code, emphasis, links and images.  Links to ``page.md`` become
``page.html``; images under docs/ (``img/*.svg``) are copied next to the pages and must exist.

Checks every relative link in the pages, in README.md and in benchmarks/README.md: the file it
names must exist, and a ``#fragment`` into a Markdown file must be one of its headings' anchors
as GitHub makes them (see :func:`slug`).  Exit status 1 if any link is broken.
"""
import html
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "_build")
# Markdown files outside docs/ whose links are checked too
CHECKED_ELSEWHERE = ["README.md", os.path.join("benchmarks", "README.md")]
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


# ------------------------------------------------------------------ links

_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_CODE = re.compile(r"%s|%s" % (_FENCE.pattern, _CODE_SPAN.pattern), re.M | re.S)
_LINK = re.compile(r"(\]\(\s*<?)([^()\s<>]+)(>?(?:\s+\"[^\"]*\")?\s*\))")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.M)
_HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:id|name)=\"([^\"]+)\"", re.I)
_HTML_ID = re.compile(r"\sid=\"([^\"]+)\"")
_HTML_HREF = re.compile(r"<a\s[^>]*href=\"([^\"]+)\"")
_HTML_HEADING = re.compile(r"<h([1-6])>(.*?)</h\1>", re.S)


def _prose_sub(pattern, repl, text):
    """pattern.sub(repl, ...) on text outside fenced code blocks and code spans."""
    out, last = [], 0
    for m in _CODE.finditer(text):
        out.append(pattern.sub(repl, text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(pattern.sub(repl, text[last:]))
    return "".join(out)


def _is_url(link):
    return bool(re.match(r"[a-zA-Z][\w+.-]*:", link)) or link.startswith("//")


def slug(heading):
    """The anchor GitHub gives a heading: its text (markup dropped: code spans keep their
    content, links their text) lower-cased, every character that is not a letter, digit,
    underscore, hyphen or space removed, each space made a hyphen."""
    text = re.sub(r"`+([^`]*)`+", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


class _Slugs:
    """GitHub's de-duplication: the second heading with a slug gets -1, the third -2, ..."""

    def __init__(self):
        self.seen = {}

    def __call__(self, heading):
        base = slug(heading)
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        return base if n == 0 else "%s-%d" % (base, n)


def anchors(text):
    """Every anchor of a Markdown text: its headings' slugs and explicit <a id/name=...>."""
    slugs = _Slugs()
    out = {slugs(h) for h in _HEADING.findall(_FENCE.sub("", text))}
    out.update(_HTML_ANCHOR.findall(text))
    return out


def _anchors_of(path, cache):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if path.endswith(".md"):
            cache[path] = anchors(text)
        else:
            cache[path] = set(_HTML_ID.findall(text)) | set(_HTML_ANCHOR.findall(text))
    return cache[path]


def _check(link, source, cache):
    """Why a relative link from the file source leads nowhere, or None if it is fine (URLs
    are not followed).  A #fragment is checked in .md and .html targets."""
    if _is_url(link):
        return None
    target, _, fragment = link.partition("#")
    dest = os.path.normpath(os.path.join(os.path.dirname(source), target)) if target else source
    if not os.path.exists(dest):
        return "no such file"
    if fragment and dest.endswith((".md", ".html")) and fragment not in _anchors_of(dest, cache):
        return "no such heading"
    return None


def broken_links(path, cache=None):
    """The relative links of the Markdown file at path that lead nowhere, as strings."""
    cache = {} if cache is None else cache
    with open(path, encoding="utf-8") as f:
        text = f.read()
    links = []
    _prose_sub(_LINK, lambda m: links.append(m.group(2)) or m.group(0), text)
    where = os.path.relpath(path, ROOT)
    return ["%s -> %s (%s)" % (where, link, why)
            for link in links for why in [_check(link, path, cache)] if why]


def check_links(names=None):
    """Broken relative links in the docs pages and in the other Markdown files checked."""
    names = pages() if names is None else names
    paths = [os.path.join(HERE, n + ".md") for n in names]
    paths += [p for p in (os.path.join(ROOT, q) for q in CHECKED_ELSEWHERE) if os.path.exists(p)]
    cache = {}
    return [b for p in paths for b in broken_links(p, cache)]


def _html_link(link, names, up):
    """A page's link as the built page in out/ needs it: page.md -> page.html, any other
    relative path re-rooted from out/ (up: the way from out/ back to docs/)."""
    if _is_url(link) or link.startswith("#"):
        return link
    target, sep, fragment = link.partition("#")
    if target.endswith(".md") and target[:-3] in names:
        return target[:-3] + ".html" + sep + fragment
    return up + "/" + link


def _heading_ids(body):
    """Give each <hN> the id its Markdown heading has on GitHub, so #fragments work here too."""
    slugs = _Slugs()
    return _HTML_HEADING.sub(
        lambda m: '<h%s id="%s">%s</h%s>' % (m.group(1), slugs(m.group(2)), m.group(2),
                                             m.group(1)), body)


# ------------------------------------------------------------------ images

# [text](target) and ![alt](target) outside code; <img src="target">
_REF = re.compile(r"(!?)\[[^\]]*\]\(([^)\s]+)\)|<img\s[^>]*?src=\"([^\"]+)\"")


def _unfenced(text):
    """``text`` with fenced code blocks blanked."""
    return re.sub(r"(?ms)^```.*?^```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _prose(text):
    """``text`` with fenced blocks and inline code blanked (they hold example links)."""
    return re.sub(r"`[^`\n]+`", lambda m: " " * len(m.group(0)), _unfenced(text))


def check_refs(path, cache=None):
    """Problems with the local links and images of the Markdown file ``path``: a target file
    that does not exist, or an anchor the target .md file (or the page itself) does not have.
    Remote (``scheme:``) targets are not fetched."""
    with open(path, encoding="utf-8") as f:
        text = _prose(f.read())
    problems, here = [], os.path.dirname(path)
    cache = {} if cache is None else cache
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
        elif anchor and dest.endswith(".md") and anchor not in _anchors_of(dest, cache):
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
    """Write the pages into out; returns (page names, broken links: in the Markdown sources
    and in the built pages)."""
    names = pages()
    os.makedirs(out, exist_ok=True)
    up = os.path.relpath(HERE, out).replace(os.sep, "/")
    nav = " ".join('<a href="%s.html">%s</a>' % (n, n) for n in names)
    broken = check_links(names)
    written = []
    for name in names:
        with open(os.path.join(HERE, name + ".md"), encoding="utf-8") as f:
            text = f.read()
        text = _prose_sub(_LINK, lambda m: m.group(1) + _html_link(m.group(2), names, up)
                          + m.group(3), text)
        m = re.search(r"^#\s+(.*)$", text, re.M)
        title = m.group(1) if m else name
        path = os.path.join(HERE, name + ".md")
        # <img src> and ![](...) targets (links are checked by check_links)
        broken += [p for p in check_refs(path) if ": image " in p]
        for rel in images(path):
            os.makedirs(os.path.dirname(os.path.join(out, rel)) or out, exist_ok=True)
            shutil.copyfile(os.path.join(HERE, rel), os.path.join(out, rel))
        written.append(os.path.join(out, name + ".html"))
        with open(written[-1], "w", encoding="utf-8") as f:
            f.write(PAGE.format(title=html.escape(title), nav=nav,
                                body=_heading_ids(to_html(text))))
    cache = {}
    for page in written:
        with open(page, encoding="utf-8") as f:
            hrefs = _HTML_HREF.findall(f.read())
        broken += ["%s -> %s (%s)" % (os.path.relpath(page, ROOT), href, why)
                   for href in map(html.unescape, hrefs)
                   for why in [_check(href, page, cache)] if why]
    return names, broken


def main(argv=None):
    names, broken = build()
    print("wrote %d pages to %s" % (len(names), os.path.relpath(OUT)))
    for b in broken:
        print("broken reference:", b, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
