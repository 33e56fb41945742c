"""ember.nn.functional's sampling grids: grid_sample (bilinear/trilinear, nearest, bicubic; zeros,
border and reflection padding), affine_grid, and the deprecated upsample* spellings of interpolate.

grid_sample is PyTorch's grid_sampler written with ops: grid coordinates are unnormalised to pixel
positions, padded (clamped or reflected), and the input is read at the integer neighbours with one
``gather`` per neighbour, weighted by the interpolation coefficients. Gradients with respect to
the input (through gather) and the grid (through the coefficients) come from autograd.
"""
import warnings as _warnings

from ..ops.registry import export as _export

__all__ = ["grid_sample", "affine_grid", "upsample", "upsample_nearest", "upsample_bilinear",
           "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
_CUBIC_A = -0.75  # the bicubic convolution coefficient PyTorch (and OpenCV) use

_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                    "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                    "grid_sample for details.")


def _ember():
    import ember
    return ember


def _unnormalize(coord, size, align_corners):
    """[-1, 1] -> pixel position: corners' centres (align_corners) or the image's edges."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """Reflect coord into [twice_low/2, twice_high/2] as often as needed (PyTorch's reflect_coordinates)."""
    ember = _ember()
    if twice_low == twice_high:
        return ember.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    flips = (dist / span).floor()
    extra = dist - flips * span  # fmod for non-negative dist
    return ember.where(flips.remainder(2) == 0, extra + low, span - extra + low)


def _pad_coordinate(coord, size, padding_mode, align_corners):
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _read(input, positions):
    """input (N, C, *spatial) at integer positions (one (N, *out) tensor per spatial dim, in input
    dim order); 0 outside the input."""
    ember = _ember()
    n, c = input.shape[:2]
    sizes = input.shape[2:]
    flat, inside = 0, True
    for pos, size in zip(positions, sizes):
        inside = inside & (pos >= 0) & (pos < size)
        flat = flat * size + pos.clamp(0, size - 1)
    out_shape = positions[0].shape[1:]
    values = input.flatten(2).gather(2, flat.reshape(n, 1, -1).expand(n, c, -1)).reshape((n, c) + tuple(out_shape))
    return values * inside.unsqueeze(1).to(values.dtype)


def _check_grid_sampler(input, grid, mode):
    nd = input.dim() - 2
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                           f"sizes {list(input.shape)} with dimension 2 being empty")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")


def _cubic_weights(t):
    a = _CUBIC_A
    return [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, [D,] H, W) at grid (N, [D_out,] H_out, W_out, 2|3) of (x, y[, z]) in [-1, 1]."""
    ember = _ember()
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warnings.warn(_DEFAULT_CHANGED, stacklevel=2)
        align_corners = False
    _check_grid_sampler(input, grid, mode)
    nd = input.dim() - 2
    sizes = list(input.shape[2:])
    # grid's last dim is (x, y[, z]): x indexes the last input dim
    coords = [_unnormalize(grid[..., nd - 1 - d], sizes[d], align_corners) for d in range(nd)]
    if mode == "bicubic":
        floors = [c.floor() for c in coords]
        weights = [_cubic_weights(c - f) for c, f in zip(coords, floors)]
        out = 0
        for i in range(4):
            for j in range(4):
                taps = [_pad_coordinate(floors[0] - 1 + i, sizes[0], padding_mode, align_corners),
                        _pad_coordinate(floors[1] - 1 + j, sizes[1], padding_mode, align_corners)]
                value = _read(input, [t.to(ember.int64) for t in taps])
                out = out + value * (weights[0][i] * weights[1][j]).unsqueeze(1)
        return out
    coords = [_pad_coordinate(c, s, padding_mode, align_corners) for c, s in zip(coords, sizes)]
    if mode == "nearest":
        return _read(input, [c.round().to(ember.int64) for c in coords])
    lows = [c.floor() for c in coords]
    fracs = [c - lo for c, lo in zip(coords, lows)]
    lows = [lo.to(ember.int64) for lo in lows]
    out = 0
    for corner in range(2 ** nd):
        offsets = [(corner >> (nd - 1 - d)) & 1 for d in range(nd)]
        weight = 1
        for frac, off in zip(fracs, offsets):
            weight = weight * (frac if off else 1 - frac)
        out = out + _read(input, [lo + off for lo, off in zip(lows, offsets)]) * weight.unsqueeze(1)
    return out


def _base_coords(size, align_corners, dtype, device):
    ember = _ember()
    if size <= 1:
        return ember.zeros(max(size, 1), dtype=dtype, device=device)
    line = ember.linspace(-1, 1, size, dtype=dtype, device=device)
    return line if align_corners else line * ((size - 1) / size)


def affine_grid(theta, size, align_corners=None):
    """The grid (N, H, W, 2) / (N, D, H, W, 3) of theta (N, 2, 3) / (N, 3, 4) applied to the output's
    normalised coordinates, for grid_sample."""
    ember = _ember()
    if align_corners is None:
        _warnings.warn(_DEFAULT_CHANGED, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        _warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                       "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                       "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta's batch size {theta.shape[0]} to match size[0] {size[0]}")
    nd = len(spatial)
    axes = [_base_coords(s, align_corners, theta.dtype, theta.device) for s in spatial]      # D?, H, W order
    mesh = [axis.reshape([-1 if j == i else 1 for j in range(nd)]).expand(spatial) for i, axis in enumerate(axes)]
    base = ember.stack([mesh[nd - 1 - i] for i in range(nd)] + [ember.ones_like(mesh[0])], -1)  # (.., x, y[, z], 1)
    points = base.reshape(1, -1, nd + 1)
    grid = points @ theta.transpose(1, 2)
    return grid.reshape([size[0]] + spatial + [nd])


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated spelling of interpolate."""
    from . import functional as F
    _warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    from . import functional as F
    _warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                   stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    from . import functional as F
    _warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                   stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


for _name in __all__:
    if callable(globals()[_name]):
        _export("nn.functional", _name, globals()[_name])
