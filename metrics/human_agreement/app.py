from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

# The module script beside this file: the Space serves its own copy, offline.
module = evaluate.load(str(Path(__file__).with_name("human_agreement.py")))
launch_gradio_widget(module)
