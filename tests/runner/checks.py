"""The assertions of the Python tests ctest runs (tests/CMakeLists.txt):
each prints ok/FAILED with what it checks, and the test exits 1 if any
failed."""


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, what, ok):
        print("%-6s %s" % ("ok" if ok else "FAILED", what))
        if not ok:
            self.failures.append(what)

    def exit_code(self):
        print("%d failed" % len(self.failures) if self.failures else "all passed")
        return 1 if self.failures else 0
