"""What differs between the CPython versions tools/regrtest.py supports.

The differences are data, in two files beside this module: tests.toml (the
supported versions, the default test files and how they change from one
version to the next) and allowlist.toml (the failures a copy of the code
cannot avoid, each with the versions it applies to and why).  This module
reads and checks them; the rest of regrtest_lib names no version.  Versions
are "3.12" strings, as the files write them.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_FILE = os.path.join(HERE, "tests.toml")
ALLOWLIST_FILE = os.path.join(HERE, "allowlist.toml")


class DataError(Exception):
    """A data file is missing, is not TOML, or says something it should not."""


def version_key(version):
    """(3, 12) for "3.12"."""
    return tuple(int(part) for part in version.split("."))


def running_version():
    return "%d.%d" % sys.version_info[:2]


# The runs an allowlist entry without `modes` applies to.
DEFAULT_ENTRY_MODES = ["pyframe"]


class Versions:
    """The contents of tests.toml and allowlist.toml."""

    def __init__(self, tests, allowlist):
        self.supported = tuple(tests["versions"])  # oldest first
        self.listed_tests = list(tests["default_tests"])
        self.since = dict(tests.get("since", {}))  # test file -> first version
        self.renamed = dict(tests.get("renamed", {}))  # version -> {old: new}
        self.mode_since = dict(tests.get("mode_since", {}))  # run mode -> first version
        # (fnmatch pattern of the test id, the versions it applies to, why,
        # the pyframe runs it applies to)
        self.allowlist = tuple(
            (
                entry["pattern"],
                tuple(entry["versions"]),
                entry["reason"],
                tuple(entry.get("modes", DEFAULT_ENTRY_MODES)),
            )
            for entry in allowlist
        )

    def named_tests(self, version):
        """The default test files under the names `version` gives them (the
        help lists these)."""
        tests = list(self.listed_tests)
        for renamed_in, names in sorted(self.renamed.items(), key=lambda i: version_key(i[0])):
            if version_key(version) >= version_key(renamed_in):
                tests = [names.get(test, test) for test in tests]
        return tests

    def allowlist_for(self, version, mode):
        """[(pattern, reason)] of the allowlist entries for `version` and the
        pyframe run `mode`, in order."""
        return [
            (pattern, reason)
            for pattern, versions, reason, modes in self.allowlist
            if version in versions and mode in modes
        ]

    def has_mode(self, mode, version):
        """Whether the run `mode` can be made on `version`."""
        since = self.mode_since.get(mode, self.supported[0])
        return version_key(version) >= version_key(since)

    def default_tests(self, version):
        """The test files run on `version` when none are named."""
        return [
            test
            for test in self.named_tests(version)
            if version_key(version) >= version_key(self.since.get(test, self.supported[0]))
        ]


def read_toml(path):
    try:
        import tomllib  # 3.11+: the oldest version supported, so always there
    except ImportError:
        raise DataError(
            "reading %s needs tomllib: run this with CPython 3.11 or newer (this is %s)"
            % (path, sys.version.split()[0])
        ) from None
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise DataError("cannot read %s: %s" % (path, exc)) from None


def check(ok, path, expected, found):
    """DataError unless `ok`: `path` should hold `expected`, not `found`."""
    if not ok:
        raise DataError("%s: expected %s, not %r" % (path, expected, found))


def is_version(text):
    parts = text.split(".") if isinstance(text, str) else ()
    return len(parts) == 2 and all(part.isdigit() for part in parts)


def is_table(value, of_type):
    return isinstance(value, dict) and all(isinstance(v, of_type) for v in value.values())


def check_tests(tests):
    path = TESTS_FILE
    keys = {"versions", "default_tests", "since", "renamed", "mode_since"}
    check(set(tests) <= keys, path, "only the keys " + ", ".join(sorted(keys)), sorted(tests))
    versions = tests.get("versions")
    ok = isinstance(versions, list) and versions and all(map(is_version, versions))
    check(ok, path, 'versions = ["3.X", ...]', versions)
    ok = versions == sorted(set(versions), key=version_key)
    check(ok, path, "versions oldest first, each once", versions)
    listed = tests.get("default_tests")
    ok = isinstance(listed, list) and listed and all(isinstance(test, str) for test in listed)
    check(ok, path, 'default_tests = ["test_x", ...]', listed)
    since, renamed = tests.get("since", {}), tests.get("renamed", {})
    check(is_table(renamed, dict), path, '[renamed."3.X"] tables', renamed)
    for version, names in renamed.items():
        ok = version in versions and is_table(names, str) and set(names) <= set(listed)
        check(ok, path, '[renamed."a version"] with default_test = "new name"', {version: names})
    named = set(listed).union(*(names.values() for names in renamed.values()))
    ok = is_table(since, str) and set(since) <= named and set(since.values()) <= set(versions)
    check(ok, path, '[since] with test_x = "the first version (of versions) that has it"', since)
    mode_since = tests.get("mode_since", {})
    ok = is_table(mode_since, str) and set(mode_since.values()) <= set(versions)
    check(
        ok,
        path,
        '[mode_since] with mode = "the first version (of versions) it runs on"',
        mode_since,
    )


def check_allowlist(allowlist, versions, modes):
    path = ALLOWLIST_FILE
    entries = allowlist.get("allow", [])
    ok = set(allowlist) <= {"allow"} and isinstance(entries, list)
    check(ok, path, "[[allow]] tables only", sorted(allowlist))
    for entry in entries:
        ok = isinstance(entry, dict) and {"pattern", "versions", "reason"} <= set(entry)
        ok = ok and set(entry) <= {"pattern", "versions", "reason", "modes"}
        ok = ok and all(isinstance(entry[key], str) and entry[key] for key in ("pattern", "reason"))
        check(ok, path, "[[allow]] with pattern, versions, reason and (optional) modes", entry)
        entry_modes = entry.get("modes", DEFAULT_ENTRY_MODES)
        ok = isinstance(entry_modes, list) and entry_modes and set(entry_modes) <= set(modes)
        check(ok, path, "%s: modes from %s" % (entry["pattern"], list(modes)), entry_modes)
        ok = isinstance(entry["versions"], list) and entry["versions"]
        ok = ok and all(version in versions for version in entry["versions"])
        expected = "%s: versions from tests.toml's %s" % (entry["pattern"], versions)
        check(ok, path, expected, entry["versions"])


def load(allowlisted_modes):
    """The Versions, or DataError saying what is wrong with which file;
    `allowlisted_modes` are the pyframe runs an allowlist entry may name."""
    tests = read_toml(TESTS_FILE)
    check_tests(tests)
    allowlist = read_toml(ALLOWLIST_FILE)
    check_allowlist(allowlist, tests["versions"], allowlisted_modes)
    return Versions(tests, allowlist.get("allow", []))
