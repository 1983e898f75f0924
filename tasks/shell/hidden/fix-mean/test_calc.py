import os
import sys
import traceback

N = os.environ.pop("HARNESS_RESULT_NONCE", "")  # before the code under test loads
sys.path.insert(0, "app")
import calc  # noqa: E402


def test_total():
    assert calc.total([1, 2, 3]) == 6


def test_median():
    assert calc.median([3, 1, 2]) == 2
    assert calc.median([4, 1, 2, 3]) == 2.5


def test_mean():
    assert calc.mean([1, 2, 3, 4]) == 2.5


def test_mean_single():
    assert calc.mean([7]) == 7


def test_mean_empty_raises():
    try:
        calc.mean([])
    except ValueError:
        return
    raise AssertionError("mean([]) must raise ValueError")


failed = 0
for name, fn in list(globals().items()):
    if name.startswith("test_") and callable(fn):
        try:
            fn()
            print(f"{N} PASS {name}")
        except Exception:
            failed += 1
            print(f"{N} FAIL {name}")
            traceback.print_exc(limit=1)
sys.exit(1 if failed else 0)
