import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("human_agreement")
launch_gradio_widget(module)
