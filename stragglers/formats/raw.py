"""Column lists and codes of the raw traces, as their documentation gives them.

Google clusterdata-2011-2 ("Google cluster-usage traces: format + schema", Reiss, Wilkes,
Hellerstein 2011, schema version 2.1): headerless CSV, gzip, timestamps in microseconds
(the trace starts at 600 s), resources normalised to the largest machine, empty field = missing.
Alibaba cluster-trace-v2018 `batch_instance.csv`: headerless CSV, times in seconds.
"""

from __future__ import annotations

from enum import IntEnum

GOOGLE_JOB_EVENTS = [
    "timestamp",
    "missing_info",
    "job_id",
    "event_type",
    "user",
    "scheduling_class",
    "job_name",
    "logical_job_name",
]

GOOGLE_TASK_EVENTS = [
    "timestamp",
    "missing_info",
    "job_id",
    "task_index",
    "machine_id",
    "event_type",
    "user",
    "scheduling_class",
    "priority",
    "cpu_request",
    "memory_request",
    "disk_space_request",
    "different_machines_restriction",
]

GOOGLE_TASK_USAGE = [
    "start_time",
    "end_time",
    "job_id",
    "task_index",
    "machine_id",
    "cpu_rate",  # MCU: mean CPU usage
    "canonical_memory_usage",  # CMU
    "assigned_memory_usage",  # AMU
    "unmapped_page_cache",  # UPC
    "total_page_cache",  # TPC
    "maximum_memory_usage",  # MAXMU
    "disk_io_time",  # MIO: mean disk I/O time
    "local_disk_space_usage",  # MDK
    "maximum_cpu_rate",  # MAXCPU
    "maximum_disk_io_time",  # MAXIO
    "cycles_per_instruction",  # CPI
    "memory_accesses_per_instruction",  # MAI
    "sample_portion",
    "aggregation_type",
    "sampled_cpu_usage",  # SCPU
]

# machine_events: one part in the trace (part-00000-of-00001); capacities normalised to the
# largest machine, like the requests
GOOGLE_MACHINE_EVENTS = [
    "timestamp",
    "machine_id",
    "event_type",
    "platform_id",
    "cpus",
    "memory",
]
GOOGLE_MACHINE_EVENTS_PART = "machine_events/part-00000-of-00001.csv.gz"

GOOGLE_TABLES = {
    "job_events": GOOGLE_JOB_EVENTS,
    "task_events": GOOGLE_TASK_EVENTS,
    "task_usage": GOOGLE_TASK_USAGE,
    "machine_events": GOOGLE_MACHINE_EVENTS,
}
# tables whose number of parts is fixed (the others have 500 parts each)
GOOGLE_TABLE_PART_COUNTS = {"machine_events": 1}


class EventType(IntEnum):
    SUBMIT = 0
    SCHEDULE = 1
    EVICT = 2
    FAIL = 3
    FINISH = 4
    KILL = 5
    LOST = 6
    UPDATE_PENDING = 7
    UPDATE_RUNNING = 8


class MachineEventType(IntEnum):
    ADD = 0
    REMOVE = 1
    UPDATE = 2


# The trace's clock: time 0 is 600 s before the first event; usage windows are 300 s long
# and aligned to this grid.
GOOGLE_TRACE_START_US = 600_000_000
GOOGLE_WINDOW_US = 300_000_000

ALIBABA_2018_BATCH_INSTANCE = [
    "instance_name",
    "task_name",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "machine_id",
    "seq_no",
    "total_seq_no",
    "cpu_avg",
    "cpu_max",
    "mem_avg",
    "mem_max",
]

# Alibaba cluster-trace-v2018 machine tables (headerless CSV, in machine_meta.tar.gz and
# machine_usage.tar.gz): machine ids m_<n>, time in seconds, utilisation in percent
ALIBABA_2018_MACHINE_META = [
    "machine_id",
    "time_stamp",
    "failure_domain_1",
    "failure_domain_2",
    "cpu_num",
    "mem_size",
    "status",
]
ALIBABA_2018_MACHINE_USAGE = [
    "machine_id",
    "time_stamp",
    "cpu_util_percent",
    "mem_util_percent",
    "mem_gps",
    "mkpi",
    "net_in",
    "net_out",
    "disk_io_percent",
]

ALIBABA_2017_BATCH_INSTANCE = [
    "start_time",
    "end_time",
    "job_id",
    "task_id",
    "machine_id",
    "status",
    "seq_no",
    "total_seq_no",
    "cpu_max",
    "cpu_avg",
    "mem_max",
    "mem_avg",
]


def google_part_name(index: int, total: int = 500) -> str:
    """`part-00000-of-00500.csv.gz`, the trace's file naming."""
    return f"part-{index:05d}-of-{total:05d}.csv.gz"
