"""References the strict docs build checks beyond plain page links -- heading anchors in another
page, images (a missing chart fails, present ones are copied next to the pages) -- and the links
of the two Markdown files outside the site (README.md, benchmarks/README.md), which MkDocs does not
see: each must name an existing file, and a #fragment into a docs page must be an anchor of that
page as built.  Runnable under pytest and plain unittest."""
import os
import re
import tempfile
import unittest

from docs_site import ROOT, Tree, built_page, ids, mkdocs_build, skip_unless_docs

PY = None
OUTSIDE = ["README.md", os.path.join("benchmarks", "README.md")]


def setUpModule():
    global PY
    PY = skip_unless_docs()


class TestCheckRefs(unittest.TestCase):

    def tree(self, body):
        return Tree(self, {
            "docs/other.md": "# Other\n\n## The `nested` workload (a chain)\n\n## Batching: "
                             "`configure(torch_defer=True)`, on by default\n",
            "docs/img/chart.svg": "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
            "docs/page.md": "# Page\n\n## Here\n\n" + body,
        })

    def test_good_references(self):
        tree = self.tree(
            "[a](other.md#the-nested-workload-a-chain) "
            "[b](other.md#batching-configuretorch_defertrue-on-by-default) [c](#here) "
            "![chart](img/chart.svg) [web](https://x.y/z) "
            "`[in code](missing.md)`\n\n```\n![in a block](nope.svg)\n```\n")
        rc, out = tree.build(PY)
        self.assertEqual(rc, 0, out)
        self.assertTrue(os.path.isfile(os.path.join(tree.site, "img", "chart.svg")))

    def test_broken_anchor_in_another_file(self):
        rc, out = self.tree("[a](other.md#no-such-heading)\n").build(PY)
        self.assertNotEqual(rc, 0)
        self.assertIn("does not contain an anchor '#no-such-heading'", out)

    def test_broken_files_and_images(self):
        rc, out = self.tree("![gone](img/gone.svg) [x](../benchmarks/nothing.py) "
                            "[y](#not-here)\n").build(PY)
        self.assertNotEqual(rc, 0)
        warnings = [line for line in out.splitlines() if line.startswith("WARNING")]
        self.assertEqual(len(warnings), 3, warnings)
        self.assertIn("'img/gone.svg'", warnings[0])
        self.assertIn("'../benchmarks/nothing.py'", warnings[1])
        self.assertIn("'#not-here'", warnings[2])


# [text](target) and ![alt](target) outside code spans and fenced blocks
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text):
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    return re.sub(r"`[^`\n]+`", "", text)


class TestOutsideTheSite(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.site = os.path.join(cls.tmp.name, "site")
        cls.rc, cls.out = mkdocs_build(PY, os.path.join(ROOT, "mkdocs.yml"), cls.site)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_links_lead_somewhere(self):
        self.assertEqual(self.rc, 0, self.out)
        problems, checked = [], 0
        for rel in OUTSIDE:
            path = os.path.join(ROOT, rel)
            with open(path, encoding="utf-8") as f:
                links = _LINK.findall(_prose(f.read()))
            for link in links:
                if re.match(r"[a-zA-Z][\w+.-]*:", link):
                    continue                  # URLs are not fetched
                target, _, fragment = link.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), target))
                checked += 1
                if not os.path.exists(dest):
                    problems.append("%s: %s: no such file" % (rel, link))
                elif fragment and dest.endswith(".md"):
                    docs = os.path.join(ROOT, "docs")
                    if os.path.dirname(dest) != docs:
                        problems.append("%s: %s: anchors checked only into docs/" % (rel, link))
                    elif fragment not in ids(built_page(self.site, os.path.basename(dest))):
                        problems.append("%s: %s: no such anchor on the built page" % (rel, link))
        self.assertEqual(problems, [])
        self.assertGreater(checked, 10)

    def test_readme_links_the_site_pages(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for needle in ("](docs/index.md", "](docs/reference.md", "](docs/api.md", "mkdocs serve",
                       "mkdocs build --strict"):
            self.assertTrue(needle in readme, needle)


if __name__ == "__main__":
    unittest.main()
