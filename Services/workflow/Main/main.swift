import WorkflowApp

// The workflow service: runs workflows from bk:events and their timers (WorkflowMain).
await WorkflowMain.run()
