"""L-BFGS (closure-based, optional strong-Wolfe line search): torch.optim.LBFGS's algorithm.

All parameters are handled as one flat vector. The scalars of the recursion (y.s, rho, H_diag,
alpha) stay 0-d tensors, as in torch, so that they round as torch's do and the state dict holds
the same kinds of values.
"""
from __future__ import annotations

import ember

from .optimizer import Optimizer, at_least_zero

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to
    ``bounds`` (default: the interval between x1 and x2); the bounds' midpoint when the cubic has
    no real minimiser."""
    low, high = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if not d2_square >= 0:
        return (low + high) / 2.0
    d2 = d2_square.sqrt()
    if x1 <= x2:
        position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(position, low), high)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step t along d meeting the strong Wolfe conditions (sufficient decrease c1, curvature
    c2): first bracket an interval holding one by growing t (cubic extrapolation), then shrink
    it (cubic interpolation, kept away from the ends). ``evaluate(t)`` returns (loss, flat grad)
    at x + t*d. Returns (loss, grad, t, evaluations)."""
    d_norm = d.abs().max()
    g = g.clone(memory_format=ember.contiguous_format)
    f_new, g_new = evaluate(t)
    evaluations, iterations = 1, 0
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    bracket = None
    # 1. bracketing
    while iterations < max_ls:
        if f_new > (f + c1 * t * gtd) or (iterations > 1 and f_new >= f_prev):
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.clone(), gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, done = [[t, f_new, g_new, gtd_new]], True
            break
        if gtd_new >= 0:  # the slope turned: a minimum lies between t_prev and t
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.clone(), gtd_new]]
            break
        t_next = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = g_new.dot(d)
        iterations += 1
    if iterations == max_ls:  # ran out of evaluations: the interval from the start
        bracket = [[0, f, g, None], [t, f_new, g_new, None]]
    # 2. zoom; entries are [t, f, g, gtd]
    insufficient_progress = False
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    while not done and iterations < max_ls:
        if abs(bracket[1][0] - bracket[0][0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(*bracket[0][0:2], bracket[0][3], *bracket[1][0:2], bracket[1][3])
        left, right = min(bracket[0][0], bracket[1][0]), max(bracket[0][0], bracket[1][0])
        margin = 0.1 * (right - left)
        if min(right - t, t - left) < margin:
            # too close to an end: accept once, move a margin inside on the second time or outside
            if insufficient_progress or t >= right or t <= left:
                t = right - margin if abs(t - right) < abs(t - left) else left + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = g_new.dot(d)
        iterations += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket[low][1]:
            bracket[high] = [t, f_new, g_new.clone(), gtd_new]
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = [t, f_new, g_new.clone(), gtd_new]
    t, f_new, g_new, _ = bracket[low]
    return f_new, g_new, t, evaluations


class LBFGS(Optimizer):
    """Implements the L-BFGS algorithm; ``step(closure)`` runs up to ``max_iter`` iterations.

    One param group only; the state lives under the first parameter (as in torch)."""

    KEYS = ("lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn")
    RULES = (("lr", at_least_zero, "Invalid learning rate: {}"),)

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None) -> None:
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        self._setup(params, locals())
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    @property
    def _params(self):
        return self.param_groups[0]["params"]

    def _flat_grad(self):
        return ember.cat([ember.zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None else p.grad.reshape(-1)
                          for p in self._params], 0)

    def _add_to_params(self, step_size, direction) -> None:
        offset = 0
        for p in self._params:
            p.add_(direction[offset:offset + p.numel()].view_as(p), alpha=step_size)
            offset += p.numel()

    def _evaluate_along(self, closure, start, t, direction):
        """(loss, flat grad) at start + t * direction; the parameters are restored afterwards."""
        self._add_to_params(t, direction)
        with ember.enable_grad():
            loss = float(closure())
        flat_grad = self._flat_grad()
        for p, saved in zip(self._params, start):
            p.copy_(saved)
        return loss, flat_grad

    @staticmethod
    def _two_loop_direction(flat_grad, history, h_diag, al):
        """-H g by the two-loop recursion over the stored (y, s, rho) ``history``, H0 = h_diag * I;
        ``al`` is the (reused) list of the first loop's coefficients."""
        old_dirs, old_stps, ro = history
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = ember.mul(q, h_diag)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r

    def step(self, closure):
        """Perform one optimization step (up to ``max_iter`` iterations); ``closure`` re-evaluates
        the model (gradients included) and returns the loss. Returns the first evaluation's loss."""
        with ember.no_grad():
            return self._lbfgs(closure)

    def _lbfgs(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with ember.enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:  # already optimal
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro, h_diag = (state.get(k) for k in ("old_dirs", "old_stps", "ro", "H_diag"))
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only when the curvature condition holds
                    if len(old_dirs) == history_size:
                        for kept in (old_dirs, old_stps, ro):
                            kept.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                al = state.setdefault("al", [None] * history_size)
                d = self._two_loop_direction(flat_grad, (old_dirs, old_stps, ro), h_diag, al)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone(memory_format=ember.contiguous_format)
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            # the first step of all is scaled down by the gradient's size
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # not a descent direction
                break
            evaluations = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [p.clone(memory_format=ember.contiguous_format) for p in self._params]
                loss, flat_grad, t, evaluations = _strong_wolfe(
                    lambda step: self._evaluate_along(closure, start, step, d), t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_to_params(t, d)
                optimal = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_to_params(t, d)
                optimal = False
                if n_iter != max_iter:  # re-evaluate, except after the last iteration
                    with ember.enable_grad():
                        loss = float(closure())
                    flat_grad = self._flat_grad()
                    optimal = flat_grad.abs().max() <= tolerance_grad
                    evaluations = 1
            current_evals += evaluations
            state["func_evals"] += evaluations
            if n_iter == max_iter or current_evals >= max_eval or optimal:
                break
            if d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
