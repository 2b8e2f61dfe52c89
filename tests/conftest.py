"""Shared fixtures: scenarios and small runs; how the tests are shared among pytest-xdist's workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from prunesim.io import scenario_files as scenario_mod


@pytest.fixture(scope="session")
def oscillation():
    return scenario_mod.load("oscillation-40")


# -- hypothesis profiles: a few hundred examples by default, thousands with --slow; derandomized, so that a run of the
# suite draws the same examples every time (a failure found once is found again, and a pass is not luck)
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("default", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=1500, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="run property tests with thousands of examples")


def pytest_configure(config):
    settings.load_profile("slow" if config.getoption("--slow") else "default")


@pytest.fixture(autouse=True)
def _crash_reports_in_a_temporary_folder(tmp_path_factory, monkeypatch):
    """Crash reports written by tests go to a scratch folder, never the user's state folder."""
    monkeypatch.setenv("PRUNESIM_CRASH_DIR", str(tmp_path_factory.getbasetemp() / "crash-reports"))


@pytest.fixture(autouse=True)
def _imports_cached_in_a_temporary_folder(tmp_path_factory, monkeypatch):
    """Each test keeps its imported transcripts in a folder of its own: never the user's cache, and never an
    import another test made (a test that breaks the importer must meet it)."""
    monkeypatch.setenv("PRUNESIM_CACHE_DIR", str(tmp_path_factory.mktemp("import-cache")))
    from prunesim.io.transcripts import import_cache

    import_cache.configure(enabled=True)


# -- pytest-xdist: which worker runs what (addopts: -n auto --dist loadfile) ------------
# A file's tests go to one worker, so that its module fixtures (a sweep, a replay over many seeds) are made once;
# the files named here are long, independent commands each (every document's examples) and are spread out.
SPREAD_FILES = {"test_doc_commands.py"}


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's, called only where it is installed
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None  # another --dist asked for: xdist's own
    from xdist.scheduler import LoadFileScheduling

    class FilesExceptSpread(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return nodeid if Path(file).name in SPREAD_FILES else file

    return FilesExceptSpread(config, log)
