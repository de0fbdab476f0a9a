import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("mad")
launch_gradio_widget(module)
