"""All nn layers; each file holds one family, as in torch/nn/modules/."""
from .module import Module  # noqa: F401
from .container import Container, Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401
from .linear import Identity, Linear, Bilinear  # noqa: F401
from .flatten import Flatten, Unflatten, PixelShuffle, PixelUnshuffle  # noqa: F401
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: F401
from .pooling import (MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d,  # noqa: F401
                      AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d)
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,  # noqa: F401
                            LayerNorm, GroupNorm, RMSNorm)
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout  # noqa: F401
from .sparse import Embedding, EmbeddingBag  # noqa: F401
from .loss import (L1Loss, MSELoss, NLLLoss, CrossEntropyLoss, BCELoss, BCEWithLogitsLoss,  # noqa: F401
                   KLDivLoss, SmoothL1Loss, HuberLoss, CosineSimilarity, PairwiseDistance)
from .transformer import (MultiheadAttention, TransformerEncoderLayer, TransformerEncoder,  # noqa: F401
                          TransformerDecoderLayer, TransformerDecoder, Transformer)

__all__ = ["Module", "Container", "ConvTranspose3d", "EmbeddingBag", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Linear", "Bilinear", "Flatten", "Unflatten", "PixelShuffle", "PixelUnshuffle", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
           "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "BatchNorm1d", "BatchNorm2d",
           "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "LayerNorm", "GroupNorm", "RMSNorm", "Dropout",
           "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "Embedding", "L1Loss",
           "MSELoss", "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "SmoothL1Loss",
           "HuberLoss", "CosineSimilarity", "PairwiseDistance", "MultiheadAttention", "TransformerEncoderLayer",
           "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder", "Transformer"] + list(_activation_all)

# Less common families load on first use (``import ember`` stays small); not in __all__, so the
# star-import of ember.nn does not load them either. File -> the names it defines (its __all__).
_LAZY_FILES = {
    "rnn": ("RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"),
    "padding": tuple(f"{kind}Pad{n}d" for kind in ("Constant", "Zero", "Reflection", "Replication", "Circular")
                     for n in (1, 2, 3)),
    "pooling_extra": ("MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
                      "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
                      "FractionalMaxPool3d"),
    "loss_extra": ("CosineEmbeddingLoss", "HingeEmbeddingLoss", "MarginRankingLoss", "SoftMarginLoss",
                   "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
                   "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss", "NLLLoss2d",
                   "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"),
    "spatial": ("Fold", "Unfold", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "ChannelShuffle"),
    "normalization_extra": ("InstanceNorm3d", "SyncBatchNorm", "LocalResponseNorm", "CrossMapLRN2d"),
    "adaptive": ("AdaptiveLogSoftmaxWithLoss",),
}
_LAZY_NAMES = {name: file for file, names in _LAZY_FILES.items() for name in names}


def __getattr__(name):
    if name in _LAZY_NAMES:
        import importlib
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
