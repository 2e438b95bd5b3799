"""A third DAgger round on the fine-tuned prior (issue 61): the planner labels the states the
round-2 prior (dagger2-25, bfloat16) reaches itself, LoRA continues from dagger2-25 on the
aggregate of all three rounds, and the chosen checkpoint plays the plan-band cell's design with
four seeds per task (``protocol.json``)."""
