"""What the provider reports back: usage read from any response, calibration of ctxwin's
counts per model, and sessions that hold predicted against reported, request by request."""

from ctxwin._feedback.calibration import Calibration
from ctxwin._feedback.usage import Usage, read_usage

__all__ = ["Calibration", "Usage", "read_usage"]
