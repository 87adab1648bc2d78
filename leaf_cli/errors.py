"""The one error type that means "the user gave us something we cannot use".

The CLI turns it into one line on stderr and exit status 2, never a traceback.
"""


class LeafError(Exception):
    """Bad input from the user: a missing file, an unknown model, a non-git folder...

    The message is shown as is, so it should say what is wrong and what to do.
    """
