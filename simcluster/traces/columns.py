"""Which column of a CSV job log holds what: the known formats, and ``--columns`` for any other log.

A job log needs, per job, when it was submitted, how many GPUs it asked for and how long it ran;
a job id, a virtual cluster (VC) and a user are optional.  Each known format names these columns its
own way, and is recognised by its header:

>>> detect(["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]).name
'philly'
>>> detect(["job_id", "submission_time", "duration", "num_gpu"]).name
'itp'
>>> detect(["id", "when"]) is None
True

``--columns submit_time=T,gpu_num=G,duration=D`` names them for any other log (fields it leaves
out keep the detected format's column, else a column of the field's own name):

>>> parse_columns("job_id=ID, submit_time=T, vc=")
{'job_id': 'ID', 'submit_time': 'T', 'vc': ''}
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

REQUIRED_FIELDS = ("submit_time", "gpu_num", "duration")
OPTIONAL_FIELDS = ("job_id", "vc", "user")  # an empty mapping (vc=) says "the log has none"
FIELDS = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS)
VENUS_EPOCH = "2020-04-01 00:00:00"  # time zero of the Helios and Lucid simulators


@dataclass(frozen=True)
class JobLogFormat:
    """A known job-log format: the header columns that identify it and where each field lives."""

    name: str
    columns: Mapping[str, str]  # field → the format's column name
    identify: tuple[str, ...]  # a header holding all of these is this format
    description: str
    default_epoch: str | None = None  # time zero for its timestamps; None: midnight of the first day
    notes: tuple[str, ...] = field(default=())


KNOWN_FORMATS = (
    JobLogFormat(
        "venus", {f: f for f in FIELDS}, ("job_id", "vc", "gpu_num", "submit_time", "duration"),
        "Helios/Venus job log (SenseTime, SC'21; the Lucid artifact's cluster_full_log.csv)", VENUS_EPOCH),
    JobLogFormat(
        "philly", {"submit_time": "timestamp", "gpu_num": "num_gpus", "duration": "duration", "vc": "cluster"},
        ("timestamp", "duration", "num_gpus", "cluster"),
        "Microsoft Philly job log as prepared by Pollux (timestamp, duration, num_gpus, gpu_time, cluster)",
        notes=("no job ids: a job's id is its line number",)),
    JobLogFormat(
        "itp", {"job_id": "job_id", "submit_time": "submission_time", "gpu_num": "num_gpu", "duration": "duration"},
        ("job_id", "submission_time", "duration", "num_gpu"),
        "Microsoft ITP job log (ElasticFlow, ASPLOS'23: job_id, submission_time, duration, num_gpu)"),
)
CUSTOM = JobLogFormat("csv", {}, (), "CSV job log with columns named by --columns")


def detect(header: Sequence[str]) -> JobLogFormat | None:
    """The known format whose identifying columns the header holds (the first that fits), or None."""
    present = set(header)
    return next((f for f in KNOWN_FORMATS if present.issuperset(f.identify)), None)


def closest(header: Sequence[str]) -> JobLogFormat | None:
    """The known format a header nearly is (more than half its identifying columns), to name what is missing."""
    present = set(header)
    score = {f.name: len(present.intersection(f.identify)) / len(f.identify) for f in KNOWN_FORMATS}
    best = max(KNOWN_FORMATS, key=lambda f: score[f.name])
    return best if score[best.name] > 0.5 else None


def by_name(name: str) -> JobLogFormat:
    return next(f for f in (*KNOWN_FORMATS, CUSTOM) if f.name == name)


def parse_columns(text: str | Mapping[str, str] | None) -> dict[str, str]:
    """``field=column,…`` → {field: column}; an unknown field is an error that lists the fields."""
    if text is None:
        return {}
    items = dict(text) if isinstance(text, Mapping) else {}
    if not isinstance(text, Mapping):
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--columns: expected FIELD=COLUMN items separated by commas, got {item!r}")
            items[key.strip()] = value.strip()
    for key in items:
        if key not in FIELDS:
            near = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ValueError(f"--columns: unknown field {key!r}{hint}; fields: {', '.join(FIELDS)}")
        if key in REQUIRED_FIELDS and not items[key]:
            raise ValueError(f"--columns: {key} is required; name its column")
    return items


def column_map(header: Sequence[str], fmt: JobLogFormat | None, given: Mapping[str, str]) -> dict[str, str | None]:
    """field → the log's column for it (None: the log has none).  Given names first, then the format's,
    then a column named like the field."""
    present = set(header)
    mapped: dict[str, str | None] = {}
    for name in FIELDS:
        if name in given:
            mapped[name] = given[name] or None
        elif fmt is not None and name in fmt.columns and fmt.columns[name] in present:
            mapped[name] = fmt.columns[name]
        else:
            mapped[name] = name if name in present else None
    return mapped
