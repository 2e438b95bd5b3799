"""ScienceWorld prompts: elementary-science tasks in a simulated house, ReAct and ReflAct."""

from amc.envs.benchmark import PromptSet

_ACTIONS = """\
Commands you can use (OBJ is an object, LOC a location):
- look around | look at OBJ | look in OBJ | read OBJ | inventory | task
- go to LOC (only to a connected location; open doors first) | teleport to LOC if allowed
- open OBJ | close OBJ | activate OBJ | deactivate OBJ
- pick up OBJ | put down OBJ | move OBJ to OBJ | pour OBJ into OBJ | dunk OBJ into OBJ
- mix OBJ | connect OBJ to OBJ | disconnect OBJ | use OBJ on OBJ | eat OBJ | flush OBJ
- focus on OBJ (marks the object the task is about; focusing on the wrong one ends the task)
- wait (ten steps pass) | wait1 (one step passes)"""

INSTRUCTION = f"""\
You are a careful student doing a science task in a simulated house with rooms such as a \
kitchen, a workshop, a greenhouse and a hallway. The task description tells you what to do; \
observations tell you what you see.
{_ACTIONS}
Use object and location names exactly as the observations write them.
Answer every turn with two lines:
Thought: <your short reasoning about the next step>
Action: <exactly one command>"""

REFLACT_INSTRUCTION = f"""\
You are a careful student doing a science task in a simulated house. Before every action, \
reflect on where you are, what you hold and what the goal still needs.
{_ACTIONS}
Use object and location names exactly as the observations write them.
Answer every turn with two lines:
Reflection: <the current state relative to the goal, in one or two sentences>
Action: <exactly one command>"""

EXAMPLE = """\
Observation: Your task is to turn on the red light bulb. First, focus on the red light bulb. \
Then connect it to the battery in the workshop using wires.
This room is called the hallway. You see a door to the workshop (that is open).
Action: go to workshop
Observation: You move to the workshop. You see a red light bulb, a battery, a black wire, \
an orange wire and a table.
Action: focus on red light bulb
Observation: You focus on the red light bulb.
Action: connect battery anode to black wire
Observation: anode on battery is now connected to terminal 1 on black wire
Action: connect black wire terminal 2 to red light bulb cathode
Observation: terminal 2 on black wire is now connected to cathode on red light bulb
Action: connect battery cathode to orange wire
Observation: cathode on battery is now connected to terminal 1 on orange wire
Action: connect orange wire terminal 2 to red light bulb anode
Observation: terminal 2 on orange wire is now connected to anode on red light bulb. The red \
light bulb is on."""

PROMPTS = PromptSet(INSTRUCTION, EXAMPLE, reflact_instruction=REFLACT_INSTRUCTION)
