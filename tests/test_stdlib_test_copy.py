"""Run the interpreter's own Lib/test/test_copy.py with fastcopy patched in.

The module is loaded at run time from the running interpreter (test.test_copy,
or <stdlib>/test/test_copy.py), so every Python version is checked against
its own copy.py tests.  Plain unittest: `python tests/test_stdlib_test_copy.py`
works on interpreters without pytest (see tests/run_test_copy_all.sh).
"""
import copy
import importlib
import importlib.util
import io
import os
import sys
import sysconfig
import unittest

if __name__ == "__main__":  # run as a script: import the fastcopy the suite tests
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import source_tree
    if source_tree.FROM_SOURCE:
        sys.path.insert(0, source_tree.SOURCE_ROOT)

try:
    import fastcopy._fastcopy  # noqa: F401
    import fastcopy
    MISSING = None
except ImportError as e:
    fastcopy = None
    MISSING = "fastcopy._fastcopy cannot be imported: %s" % e
    if os.environ.get("FASTCOPY_REQUIRE_CORE"):  # set by run_test_copy_all.sh
        raise


def load_test_copy():
    """The running interpreter's test.test_copy module, or None."""
    try:
        return importlib.import_module("test.test_copy")
    except ImportError:
        pass
    path = os.path.join(sysconfig.get_paths()["stdlib"], "test", "test_copy.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("_stdlib_test_copy", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except ImportError:  # e.g. test.support missing from a stripped install
        return None
    return mod


TEST_COPY = load_test_copy()


def run_suite(mod):
    suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
    stream = io.StringIO()
    result = unittest.TextTestRunner(stream=stream, verbosity=2).run(suite)
    return result, stream.getvalue()


def _describe(result, log):
    lines = ["%d run, %d failures, %d errors" % (result.testsRun, len(result.failures), len(result.errors))]
    for test, tb in result.failures + result.errors:
        lines.append("--- %s\n%s" % (test, tb))
    if len(lines) == 1:
        lines.append(log[-2000:])
    return "\n".join(lines)


@unittest.skipIf(TEST_COPY is None, "this interpreter has no Lib/test/test_copy.py")
class StdlibTestCopy(unittest.TestCase):

    def test_unpatched_sanity(self):
        result, log = run_suite(TEST_COPY)
        self.assertGreater(result.testsRun, 50)
        self.assertTrue(result.wasSuccessful(), _describe(result, log))

    @unittest.skipIf(fastcopy is None, str(MISSING))
    def test_patched_with_fastcopy(self):
        # patched() may rebind the functions or swap their __code__ (so that
        # early `from copy import deepcopy` bindings are patched too)
        def state():
            return [(f, f.__code__) for f in (copy.copy, copy.deepcopy)]
        orig = state()
        with fastcopy.patched():
            during = state()
            result, log = run_suite(TEST_COPY)
        self.assertNotEqual(during[1], orig[1], "fastcopy.patched() did not replace copy.deepcopy")
        self.assertNotEqual(during[0], orig[0], "fastcopy.patched() did not replace copy.copy")
        self.assertEqual(state(), orig, "patch not undone")
        self.assertGreater(result.testsRun, 50)
        self.assertEqual(len(result.failures) + len(result.errors), 0, _describe(result, log))
        self.assertTrue(result.wasSuccessful(), _describe(result, log))


if __name__ == "__main__":
    print(sys.version.split()[0], "fastcopy:", "built" if fastcopy else MISSING, file=sys.stderr)
    unittest.main(verbosity=2)
