"""WebShop prompts: search an online shop and buy the product that fits the instruction."""

from amc.envs.benchmark import PromptSet

INSTRUCTION = """\
You are shopping on a website for a customer. The instruction says what to buy, with the \
attributes, options (such as size or colour) and the highest price they accept. Pages are \
shown as text with parts separated by [SEP].
You can act with two commands:
- search[<keywords>]: search the shop (only on a page with a search bar).
- click[<button>]: click a link or button shown on the page, e.g. a product id, an option, \
"next >", "< prev", "back to search", "description" or "buy now".
Open promising products, choose every option the instruction asks for, then click buy now.
Answer every turn with two lines:
Thought: <your short reasoning>
Action: <exactly one command>"""

EXAMPLE = """\
Observation: WebShop [SEP] Instruction: [SEP] i want a pack of 12 unscented beeswax candles, \
and price lower than 40.00 dollars [SEP] Search
Action: search[12 pack unscented beeswax candles]
Observation: Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B07X1ABCDE \
[SEP] Pure Beeswax Tea Light Candles, Unscented, 12 Pack [SEP] $24.99 [SEP] B08Y2FGHIJ \
[SEP] Scented Soy Candle Set [SEP] $18.50
Action: click[b07x1abcde]
Observation: Back to Search [SEP] < Prev [SEP] size [SEP] 6 pack [SEP] 12 pack [SEP] Pure \
Beeswax Tea Light Candles, Unscented [SEP] Price: $24.99 [SEP] Rating: N.A. [SEP] \
Description [SEP] Features [SEP] Reviews [SEP] Buy Now
Action: click[12 pack]
Observation: You have clicked 12 pack.
Action: click[buy now]
Observation: Thank you for shopping with us! Your score: 1.0"""

PROMPTS = PromptSet(INSTRUCTION, EXAMPLE)
