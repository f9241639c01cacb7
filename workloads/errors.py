"""Errors the runner reports to a user as one clear line (exit code 2), never a traceback."""


class InputError(ValueError):
    """Bad user input: unknown model/suite/key, a count below 1, an unwritable path.

    The message names the offending key or value and what is allowed.
    """
