"""``python docs/build.py``'s reference checks: links to files, heading anchors in other .md files
(``../README.md#benchmarks``), image references; then the real tree builds clean with its charts
copied next to the pages.  Runnable under pytest and plain unittest."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isfile(os.path.join(ROOT, "docs", "build.py")):
    raise unittest.SkipTest("no docs/ here (the suite runs against an installed wheel)")
spec = importlib.util.spec_from_file_location("docs_build", os.path.join(ROOT, "docs", "build.py"))
build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build)


class TestCheckRefs(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.docs = os.path.join(self.tmp.name, "docs")
        os.makedirs(os.path.join(self.docs, "img"))
        self.write("README.md", "# Top\n\n## The `nested` workload (a chain)\n\n## Batching: "
                                "`configure(torch_defer=True)`, on by default\n")
        self.write("docs/img/chart.svg", "<svg/>")

    def write(self, rel, text):
        with open(os.path.join(self.tmp.name, rel), "w", encoding="utf-8") as f:
            f.write(text)
        return os.path.join(self.tmp.name, rel)

    def check(self, body):
        return build.check_refs(self.write("docs/page.md", "# Page\n\n## Here\n\n" + body))

    def test_good_references(self):
        self.assertEqual(self.check(
            "[a](../README.md#the-nested-workload-a-chain) "
            "[b](../README.md#batching-configuretorch_defertrue-on-by-default) [c](#here) "
            "![chart](img/chart.svg) <img src=\"img/chart.svg\" alt=\"x\"> [web](https://x.y/z) "
            "`[in code](missing.md)`\n\n```\n![in a block](nope.svg)\n```\n"), [])

    def test_broken_anchor_in_another_file(self):
        problems = self.check("[a](../README.md#no-such-heading)\n")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("README.md has no heading #no-such-heading", problems[0])

    def test_broken_files_and_images(self):
        problems = self.check("![gone](img/gone.svg) <img src=\"img/gone.png\"> "
                              "[x](../benchmarks/nothing.py) [y](#not-here)\n")
        self.assertEqual(len(problems), 4, problems)
        self.assertIn("image img/gone.svg: no such file", problems[0])
        self.assertIn("image img/gone.png: no such file", problems[1])
        self.assertIn("link ../benchmarks/nothing.py: no such file", problems[2])
        self.assertIn("has no heading #not-here", problems[3])

    def test_fallback_converter_renders_images_and_keeps_comments(self):
        out = build.fallback_markdown("<!-- chart x -->\n![a chart](img/chart.svg)\n"
                                      "<!-- /chart -->\n")
        self.assertIn('<img src="img/chart.svg" alt="a chart">', out)
        self.assertIn("<!-- chart x -->", out)
        self.assertNotIn("&lt;!--", out)


class TestTree(unittest.TestCase):

    def test_docs_build_clean_with_images(self):
        proc = subprocess.run([sys.executable, os.path.join("docs", "build.py")], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for name in os.listdir(os.path.join(ROOT, "docs")):
            if name.endswith(".md"):
                for rel in build.images(os.path.join(ROOT, "docs", name)):
                    self.assertTrue(os.path.isfile(os.path.join(build.OUT, rel)), rel)


if __name__ == "__main__":
    unittest.main()
