"""ember.fx.experimental: where PyTorch keeps make_fx (``proxy_tensor``); the tracer lives in ember._functorch."""
