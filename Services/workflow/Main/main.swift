import WorkflowApp

// workflow: see WorkflowMain, which buzzkit-server runs too.
await WorkflowMain.run()
