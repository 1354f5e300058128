"""How the C core was built (``fastcopy._fastcopy._sysinfo()``), checked against how the tests
are being run: a sanitizer run must really test an instrumented build, and the extension must
have been built for the running interpreter."""
import os
import sys
import unittest

try:
    from fastcopy import _fastcopy
except ImportError:
    _fastcopy = None

UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


@unittest.skipIf(_fastcopy is None or not hasattr(_fastcopy, "_sysinfo"), "no _sysinfo()")
class BuildInfo(unittest.TestCase):

    def setUp(self):
        self.info = _fastcopy._sysinfo()

    def test_shape(self):
        for key in ("debug", "asan", "python_built"):
            self.assertIn(key, self.info)
        self.assertIn(self.info["debug"], (0, 1))
        self.assertIn(self.info["asan"], (0, 1))

    def test_built_for_this_interpreter(self):
        built = tuple(int(p) for p in self.info["python_built"].split(".")[:2])
        self.assertEqual(built, sys.version_info[:2])

    @unittest.skipUnless(UNDER_ASAN, "not a sanitizer run")
    def test_sanitizer_run_uses_instrumented_build(self):
        # scripts/sanitize.sh preloads libasan: the module must be the FASTCOPY_SANITIZE build
        self.assertEqual(self.info["asan"], 1, self.info)
        self.assertEqual(self.info["debug"], 1, self.info)

    def test_asan_build_needs_preload(self):
        if self.info["asan"]:
            self.assertTrue(UNDER_ASAN, "an ASan build imported without LD_PRELOAD=libasan.so")

    def test_returns_fresh_dict(self):
        a = _fastcopy._sysinfo()
        a["debug"] = "changed"
        self.assertNotEqual(_fastcopy._sysinfo()["debug"], "changed")


if __name__ == "__main__":
    unittest.main()
