"""pytest plugin: run a test suite with ``copy.deepcopy``/``copy.copy`` replaced by fastcopy.

Registered through the ``pytest11`` entry point named ``fastcopy``, so it is loaded in every
pytest run of an environment where fastcopy is installed, and it must stay inert there unless
asked: nothing is patched and the ``fastcopy`` C core is not touched unless ``--fastcopy`` is
given or the ini option ``fastcopy = true`` is set (``--no-fastcopy`` overrides the ini).

When active, the stdlib functions are patched before the initial conftest files are imported
(so a conftest's ``from copy import deepcopy`` already sees fastcopy) and restored when pytest
unconfigures.  A test marked ``@pytest.mark.no_fastcopy`` runs its setup, call and teardown with
the stdlib functions, also when the patch came from elsewhere (``FASTCOPY_AUTOPATCH=1``).
See docs/patching.md.

``--fastcopy-profile`` runs the session under ``fastcopy.profile()`` (which patches too, for the
run) and prints its report in the terminal summary (docs/profiling.md).
"""
import sys

import pytest

_MARKER = "no_fastcopy"


def pytest_addoption(parser):
    group = parser.getgroup("fastcopy")
    group.addoption(
        "--fastcopy", action="store_const", const=True, dest="fastcopy", default=None,
        help="replace copy.deepcopy/copy.copy by fastcopy for the whole run.")
    group.addoption(
        "--no-fastcopy", action="store_const", const=False, dest="fastcopy",
        help="keep the stdlib copy functions even if the ini file sets fastcopy = true.")
    parser.addini(
        "fastcopy", type="bool", default=False,
        help="replace copy.deepcopy/copy.copy by fastcopy for the whole run (default: false).")
    group.addoption(
        "--fastcopy-profile", action="store_true", default=False, dest="fastcopy_profile",
        help="record every copy.deepcopy/copy.copy of the run by call site (fastcopy.profile(), "
             "patched for the run) and print the costliest sites at the end.")
    group.addoption(
        "--fastcopy-profile-top", type=int, default=20, metavar="N", dest="fastcopy_profile_top",
        help="rows of the --fastcopy-profile report (default 20; 0: all).")
    group.addoption(
        "--fastcopy-profile-sort", choices=("time", "bytes", "calls"), default="time",
        dest="fastcopy_profile_sort", help="order of the --fastcopy-profile report.")
    group.addoption(
        "--fastcopy-profile-json", metavar="FILE", default=None, dest="fastcopy_profile_json",
        help="also write the --fastcopy-profile records as JSON to FILE.")


def _wanted(config):
    opt = getattr(config.option, "fastcopy", None)
    if opt is None:
        # the early config only has the parsed known args
        opt = getattr(getattr(config, "known_args_namespace", None), "fastcopy", None)
    if opt is not None:
        return opt
    return bool(config.getini("fastcopy"))


class _Session:
    """State of an active run: whether we patched, so we restore only what we changed."""

    def __init__(self, fastcopy):
        self.fastcopy = fastcopy
        self.we_patched = False

    def start(self):
        if not self.fastcopy.is_patched():
            self.fastcopy.patch()
            self.we_patched = True

    def stop(self):
        if self.we_patched and self.fastcopy.is_patched():
            self.fastcopy.unpatch()
        self.we_patched = False


def _import_fastcopy(option):
    try:
        import fastcopy
    except ImportError as exc:  # pragma: no cover - broken install
        raise pytest.UsageError(f"{option}: cannot import fastcopy: {exc}") from exc
    return fastcopy


def _activate(config):
    if getattr(config, "_fastcopy_session", None) is not None:
        return
    session = _Session(_import_fastcopy("--fastcopy"))
    session.start()
    config._fastcopy_session = session


def _profile_wanted(config):
    opt = getattr(config.option, "fastcopy_profile", None)
    if opt is None:
        opt = getattr(getattr(config, "known_args_namespace", None), "fastcopy_profile", None)
    return bool(opt)


def _start_profile(config):
    if getattr(config, "_fastcopy_profile", None) is not None:
        return
    config._fastcopy_profile = _import_fastcopy("--fastcopy-profile").profile().start()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # Earliest point where the options are known: patch before conftest.py is imported.
    if _wanted(early_config):
        _activate(early_config)
    if _profile_wanted(early_config):
        _start_profile(early_config)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{_MARKER}: run this test with the stdlib copy.deepcopy/copy.copy even under --fastcopy.")
    if _wanted(config):
        _activate(config)  # no-op if already active (plugin loaded late, e.g. from a conftest)
    if _profile_wanted(config):
        _start_profile(config)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    prof = getattr(config, "_fastcopy_profile", None)
    if prof is None:
        return
    sort = getattr(config.option, "fastcopy_profile_sort", "time") or "time"
    top = getattr(config.option, "fastcopy_profile_top", 20)
    terminalreporter.write_sep("=", "fastcopy profile")
    terminalreporter.write(prof.report(top=top or None, sort=sort))
    path = getattr(config.option, "fastcopy_profile_json", None)
    if path:
        with open(path, "w") as f:
            f.write(prof.to_json(sort=sort, indent=1) + "\n")
        terminalreporter.write_line("fastcopy profile: records written to %s" % path)


def pytest_unconfigure(config):
    prof = getattr(config, "_fastcopy_profile", None)
    if prof is not None:
        prof.stop()
        config._fastcopy_profile = None
    session = getattr(config, "_fastcopy_session", None)
    if session is not None:
        session.stop()
        config._fastcopy_session = None


def _loaded_fastcopy():
    """The fastcopy module if something already imported it (never imports it here)."""
    fc = sys.modules.get("fastcopy")
    return fc if callable(getattr(fc, "is_patched", None)) else None


def pytest_report_header(config):
    session = getattr(config, "_fastcopy_session", None)
    if session is None:
        fc = _loaded_fastcopy()
        if fc is not None and fc.is_patched():
            # e.g. FASTCOPY_AUTOPATCH=1: patched before pytest started, not ours to undo
            return "fastcopy: active, patched outside pytest (the plugin itself is off)"
        return "fastcopy: inactive (--fastcopy to patch copy.deepcopy/copy.copy)"
    fc = session.fastcopy
    how = "patched by this run" if session.we_patched else "already patched before this run"
    version = getattr(fc, "__version__", "?")
    return f"fastcopy: active, copy.deepcopy/copy.copy -> fastcopy {version} ({how})"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if item.get_closest_marker(_MARKER) is None:
        yield
        return
    session = getattr(item.config, "_fastcopy_session", None)
    fc = session.fastcopy if session is not None else _loaded_fastcopy()
    if fc is None:
        yield
        return
    was = fc.is_patched()
    if was:
        fc.unpatch()
    try:
        yield
    finally:
        if was and not fc.is_patched():
            fc.patch()
