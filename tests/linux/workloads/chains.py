# Python call chains of a known shape, for hvprof's test bed (docs/python.md; judged by
# tests/linux/tests/test_linux_python.c). Every call site is marked "# -> callee", with "(C)"
# when the call goes through the interpreter's C code (a builtin calling back, a generator
# resumed by next()) and "(thread)" for the first function of a new thread. The test reads the
# marks to know each chain a sample may show, with its lines, and where native frames must
# stand between two Python ones.
# Usage: python3 -I -S chains.py SECONDS
import _thread
import sys
import time

END = time.monotonic() + float(sys.argv[1])


def leaf_loop(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def recurse(depth):
    if depth == 0:
        return leaf_loop(2000)  # -> leaf_loop
    return recurse(depth - 1)  # -> recurse


def key(x):
    return leaf_loop(300) + x  # -> leaf_loop


def through_c():
    return sorted(range(8), key=key)  # -> key (C)


def numbers():
    while True:
        yield leaf_loop(1000)  # -> leaf_loop


def through_generator():
    g = numbers()  # -> numbers
    for _ in range(4):
        next(g)  # -> numbers (C)
    g.close()  # -> numbers (C)


def main_loop():
    while time.monotonic() < END:
        recurse(3)  # -> recurse
        through_c()  # -> through_c
        through_generator()  # -> through_generator


def in_thread():
    leaf_loop(5000)  # -> leaf_loop


def worker():
    while time.monotonic() < END:
        in_thread()  # -> in_thread


_thread.start_new_thread(worker, ())  # -> worker (thread)
main_loop()  # -> main_loop
time.sleep(0.3)
print("HVTEST python chains done", sys.version.split()[0], flush=True)
