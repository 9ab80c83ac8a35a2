"""A deliberately failing method, loaded through the config's `method_dirs` by the
end-to-end test: its jobs must be reported as failed, with the reason, never as NaN."""

from stragglers.methods.base import Method


class AlwaysFails(Method):
    name = "AlwaysFails"
    family = "Test"

    def predict(self, checkpoint):
        raise RuntimeError("this method fails on purpose")
