"""The task index as calls see it (README "State"): what answers and events show of tasks
(`index`), writing it off the call's path (`record`), ListTasks from it (`listing`)."""
