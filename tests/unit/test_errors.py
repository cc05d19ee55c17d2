"""Poll error reasons: every error class carries a reason the reason label knows, checked when the
class is defined and when a reason is given to one error."""

import pytest

from fabric_exporter import errors
from fabric_exporter.errors import REASONS, PollError

CLASSES = {errors.PollTimeoutError: "timeout", errors.ConnectError: "connect", errors.AuthError: "auth",
           errors.HostKeyError: "host_key", errors.CommandError: "command_failed",
           errors.OutputTooLargeError: "output_too_large", errors.ParseError: "parse", PollError: "internal"}


@pytest.mark.parametrize("cls,reason", CLASSES.items(), ids=lambda v: getattr(v, "__name__", v))
def test_each_class_raises_with_its_reason(cls, reason):
    with pytest.raises(cls) as caught:
        raise cls("what went wrong")
    assert caught.value.reason == reason and reason in REASONS
    assert str(caught.value) == "what went wrong"


def test_parse_error_is_also_a_value_error():
    assert issubclass(errors.ParseError, ValueError)


def test_a_reason_given_to_one_error_overrides_its_class_reason():
    assert errors.CommandError("x", reason="timeout").reason == "timeout"
    assert errors.CommandError("x").reason == "command_failed"


def test_an_unknown_reason_is_refused_when_raised_and_when_a_class_is_defined():
    with pytest.raises(ValueError, match="unknown poll error reason 'nope'"):
        PollError("x", reason="nope")
    with pytest.raises(ValueError, match="unknown poll error reason 'nope'"):
        class Misnamed(PollError, reason="nope"):
            pass


def test_a_subclass_without_a_reason_keeps_its_parents():
    class Narrower(errors.PollTimeoutError):
        pass

    assert Narrower("x").reason == "timeout"


@pytest.mark.parametrize("old,new", [("PollTimeout", "PollTimeoutError"), ("CommandFailed", "CommandError"),
                                     ("OutputTooLarge", "OutputTooLargeError")])
def test_the_0_1_names_still_import_with_a_deprecation_warning(old, new):
    import fabric_exporter.errors as errors

    with pytest.warns(DeprecationWarning, match=f"{old} is now {new}"):
        cls = getattr(errors, old)
    assert cls is getattr(errors, new)
    with pytest.raises(AttributeError):
        errors.NoSuchError  # noqa: B018
