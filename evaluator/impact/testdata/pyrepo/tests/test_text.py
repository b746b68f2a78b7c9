from calc import text


class TestGreeter:
    def test_greet(self):
        assert text.Greeter().greet("bob") == "hello, bob"

    def test_banner(self):
        assert text.BANNER == "=========="


def test_shout():
    assert text.shout("hi") == "HI!"


def test_table():
    assert text.table()["b"] == 2


def test_lazy():
    assert text.lazy() == 42
