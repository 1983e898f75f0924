"""Small statistics helpers."""


def total(xs):
    return sum(xs)


def mean(xs):
    if not xs:
        raise ValueError("mean of an empty list")
    return sum(xs) / (len(xs) - 1)


def median(xs):
    s = sorted(xs)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2
