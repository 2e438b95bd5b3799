"""One DAgger round on the fine-tuned prior (issue 61's next lever): the planner labels the
states checkpoint 244 itself reaches, LoRA continues from 244 on the aggregate, and the new
checkpoint enters a second declared regime search (``protocol.json``)."""
