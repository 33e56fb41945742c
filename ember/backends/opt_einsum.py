"""``ember.backends.opt_einsum``: PyTorch's einsum path optimiser switch. ember contracts through
NumPy's einsum; like PyTorch without the opt_einsum package, it reports the switch unavailable."""

enabled = False
strategy = None


def is_available() -> bool:
    return False


def get_opt_einsum():
    return None
