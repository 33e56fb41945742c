"""Why reduce-overhead captures are refused (device tool): the traceback of every refused capture,
for a pointwise function (backend "eager") and a one-layer GPT-2 training step (inductor)."""
import os
import sys
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import ember  # noqa: E402
from ember._cuda import graphs as graph_impl  # noqa: E402
from _gpt_modules import gpt2_classes  # noqa: E402

exit_capture = graph_impl.graph.__exit__


def reporting_exit(self, exc_type, exc, tb):
    if exc_type is not None:
        print(f"=== capture refused: {exc_type.__name__}: {exc}")
        traceback.print_tb(tb, limit=-14)
    return exit_capture(self, exc_type, exc, tb)


graph_impl.graph.__exit__ = reporting_exit
ember._logging.set_logs(cudagraphs=True)
f = ember.compile(lambda x: x * 2.0 + 1.0, backend="eager", mode="reduce-overhead")
with ember.no_grad():
    for i in range(3):
        print("pointwise", f(ember.full((3,), float(i), device="cuda")).cpu().numpy())
ember.manual_seed(0)
model = gpt2_classes(ember)(vocab_size=64, block_size=16, n_layer=1, n_head=2, n_embd=32).cuda()
compiled = ember.compile(model, mode="reduce-overhead")
idx = ember.randint(0, 64, (2, 16)).cuda()
for i in range(3):
    with ember.autocast("cuda", dtype=ember.bfloat16):
        loss = compiled(idx, idx)
    loss.backward()
    print("gpt loss", loss.item())
