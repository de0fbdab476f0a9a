import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("mcas")
launch_gradio_widget(module)
