"""Online straggler prediction: trace conversion, online replay, methods, evaluation."""

__version__ = "0.1.0"
