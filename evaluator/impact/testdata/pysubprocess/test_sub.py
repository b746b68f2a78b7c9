import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))


def run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "mod", *args], cwd=tmp_path, env=env,
                          check=True, capture_output=True, text=True).stdout


def test_child(tmp_path):
    assert run(tmp_path) == "1\n"


def test_child_exits_hard(tmp_path):
    assert run(tmp_path, "exit") == ""


def test_no_child():
    pass


def test_fork():
    import multiprocessing

    import mod

    p = multiprocessing.get_context("fork").Process(target=mod.g)
    p.start()
    p.join()
    assert p.exitcode == 0
