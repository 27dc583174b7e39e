"""Every actor message between the frontend adapter, the router, the pane workers and the
collab service.

One module per family: frontend <-> router (frontend.py), router -> worker commands
(commands.py) and the worker's replies (replies.py), the facts a worker reports about its pane
(facts.py), pane.exec (exec.py), router <-> collab service (collab.py). Each message is a
small frozen record with an explicit ``type``; most commands are imperative and events past
tense (type names are wire format).
codec.py is the one codec, and nothing else in Pebrel calls msgpack.
``from pebrel import messages as m`` gives all of them.

The fork server's records (forkserver.py) are JSON lines with a codec of their own: they go
over pipes and a Unix socket between the router, the fork server and new workers, never over
ZeroMQ or the frontend link.
"""

from __future__ import annotations

from pebrel.messages.base import (
    Message,
    PaneFact,
    Reply,
)
from pebrel.messages.codec import (
    MessageError,
    StreamDecoder,
    all_message_types,
    decode,
    encode,
)
from pebrel.messages.collab import (
    CollabAnswered,
    CollabRequest,
    CollabStarted,
    StopCollab,
    TerminalAnswered,
    TerminalCall,
    WatchSnapshots,
)
from pebrel.messages.commands import (
    CancelAtPrompt,
    ClosePane,
    PasteText,
    ReadGrid,
    ReadScreen,
    ReadStyled,
    ResizePty,
    SendKey,
    WriteAtPrompt,
    WriteInput,
)
from pebrel.messages.exec import (
    ExecFinished,
    RunExec,
)
from pebrel.messages.facts import (
    CwdReported,
    ForegroundChanged,
    PaneExited,
    PaneStarted,
    PaneStartFailed,
    ProgramRecords,
    ProgramStatus,
    ScreenMatched,
    ScreenPending,
    ScreenPublished,
    ShellMarked,
    SshPhase,
    TitleChanged,
)
from pebrel.messages.frontend import (
    AnswersRenewed,
    AnswersStale,
    AnswerUsed,
    ConnectionClosed,
    FrontendStarted,
    HandleRequest,
    RequestAnswered,
    ScreensChanged,
    SnapshotChanged,
    StopFrontend,
)
from pebrel.messages.replies import (
    NOT_AT_PROMPT,
    PANE_EXITED,
    GridRead,
    InputWritten,
    PaneClosed,
    PasteWritten,
    PtyResized,
    ScreenRead,
    StyledRead,
)

__all__ = [
    "NOT_AT_PROMPT",
    "PANE_EXITED",
    "AnswerUsed",
    "AnswersRenewed",
    "AnswersStale",
    "CancelAtPrompt",
    "ClosePane",
    "CollabAnswered",
    "CollabRequest",
    "CollabStarted",
    "ConnectionClosed",
    "CwdReported",
    "ExecFinished",
    "ForegroundChanged",
    "FrontendStarted",
    "GridRead",
    "HandleRequest",
    "InputWritten",
    "Message",
    "MessageError",
    "PaneClosed",
    "PaneExited",
    "PaneFact",
    "PaneStartFailed",
    "PaneStarted",
    "PasteText",
    "PasteWritten",
    "ProgramRecords",
    "ProgramStatus",
    "PtyResized",
    "ReadGrid",
    "ReadScreen",
    "ReadStyled",
    "Reply",
    "RequestAnswered",
    "ResizePty",
    "RunExec",
    "ScreenMatched",
    "ScreenPending",
    "ScreenPublished",
    "ScreenRead",
    "ScreensChanged",
    "SendKey",
    "ShellMarked",
    "SnapshotChanged",
    "SshPhase",
    "StopCollab",
    "StopFrontend",
    "StreamDecoder",
    "StyledRead",
    "TerminalAnswered",
    "TerminalCall",
    "TitleChanged",
    "WatchSnapshots",
    "WriteAtPrompt",
    "WriteInput",
    "all_message_types",
    "decode",
    "encode",
]
