def test_by_name_first(request):
    assert request.getfixturevalue("token") == "t"


def test_declared(token):
    assert token == "t"


def test_by_name_cached(request):
    assert request.getfixturevalue("token") == "t"


def test_none():
    pass
