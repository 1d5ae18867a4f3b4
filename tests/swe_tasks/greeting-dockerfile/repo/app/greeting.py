def greeting():
    return "hello"
