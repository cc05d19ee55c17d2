"""Scheduler jobs and the nodes they hold (issue 22): the join key that names the job behind a
congested port. The rules (mixin/rules/jobs.py) join these to every host's fabric series on
``node`` = the host's scheduler node name."""

from .spec import MetricSpec

SLURM = "slurm_jobs"

JOB = ("fabric", "cluster", "job_id")
JOB_NODE = JOB + ("job_name", "user", "account", "partition", "node")

METRICS = [
    MetricSpec("fabric_job_node_info", "info", "",
               "One series per running job and node it holds (squeue --json job_id/array/het ids, nodes "
               "expanded; job_name, user, account empty when dropped for privacy).",
               (JOB_NODE,), (SLURM,), origin=("squeue nodes", "job_state")),
    MetricSpec("fabric_job_start_time_seconds", "gauge", "seconds",
               "When the running job started, Unix time (squeue start_time).",
               (JOB,), (SLURM,), origin=("start_time",)),
    MetricSpec("fabric_jobs_running", "gauge", "",
               "Running jobs per partition, every one counted (also those left out by max_jobs/max_series).",
               (("fabric", "cluster", "partition"),), (SLURM,), origin=("job_state", "partition")),
    MetricSpec("fabric_jobs_left_out", "gauge", "",
               "Running jobs whose node series this poll left out because of max_jobs or max_series "
               "(the poll is then partial).",
               (("fabric", "cluster"),), (SLURM,)),
]
