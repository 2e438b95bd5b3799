"""A second DAgger round on the fine-tuned prior (issue 61): the planner labels the states the
round-1 prior (dagger1-100, bfloat16) reaches itself, LoRA continues from dagger1-100 on the
aggregate of both rounds, and the chosen checkpoint plays the plan-band cell's declared design
(``protocol.json``)."""
