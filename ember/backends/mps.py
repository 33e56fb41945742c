"""``ember.backends.mps``: Apple's Metal backend, absent here."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
