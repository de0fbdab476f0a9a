import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("pst_sts")
launch_gradio_widget(module)
