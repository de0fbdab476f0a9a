import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("gep")
launch_gradio_widget(module)
