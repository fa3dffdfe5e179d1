"""A job is made from what its trace gives; its life in the simulation starts at each field's default."""

from dataclasses import MISSING, fields
from inspect import signature

from simcluster.job import Job, JobState, Workload


def make() -> Job:
    return Job(index=3, job_id="j3", vc="a", gpu_num=2, submit_time=10, duration=100)


def test_every_life_field_starts_at_its_declared_default():
    job = make()
    for f in fields(Job):
        if not f.init and f.default is not MISSING:
            assert getattr(job, f.name) == f.default, f.name


def test_the_arguments_are_exactly_the_fields_a_trace_gives():
    given = [f.name for f in fields(Job) if f.init]
    assert list(signature(Job).parameters) == given
    defaults = {name: p.default for name, p in signature(Job).parameters.items() if p.default is not p.empty}
    assert defaults == {f.name: f.default for f in fields(Job) if f.init and f.default is not MISSING}


def test_work_left_pending_since_and_queue_vc_come_from_the_given_fields():
    job = make()
    assert (job.work_left, job.pending_since, job.queue_vc, job.state) == (100.0, 10.0, "a", JobState.PENDING)
    assert Job(0, "x", "a", 1, 0, 1, queue_vc="profiler").queue_vc == "profiler"


def test_positional_and_keyword_construction_make_the_same_job():
    workload = Workload("ResNet18", "CIFAR-10", 64, 1)
    by_position = Job(1, "j", "a", 4, 5, 6, "u", workload, 512.0)
    by_keyword = Job(index=1, job_id="j", vc="a", gpu_num=4, submit_time=5, duration=6, user="u", workload=workload,
                     memory=512.0)
    assert repr(by_position) == repr(by_keyword)


def test_a_job_has_no_instance_dict():  # slots: a million jobs' memory
    assert not hasattr(make(), "__dict__")
