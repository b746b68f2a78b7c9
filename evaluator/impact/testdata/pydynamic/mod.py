def token():
    return "t"
