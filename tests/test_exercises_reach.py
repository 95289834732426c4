"""reach.py: a learner's function that calls a course helper is found, however it names or imports it."""

import functools

from gpu_lessons.exercises import coalescing as ex
from gpu_lessons.exercises.reach import answers, reaches
from gpu_lessons.sim import trace


def imports_from_inside():
    from gpu_lessons.sim import trace as tracer

    return tracer.simulate


def imports_the_module_inside():
    import gpu_lessons.sim.trace as tracer

    return tracer.simulate


def imports_in_a_nested_function():
    def inner():
        from gpu_lessons.sim.trace import simulate

        return simulate

    return inner


def calls_a_reference_solution(stride):
    return ex.solution_stride_prediction(stride, 1.0)


def works_it_out(stride):
    return 1.0 / stride


def test_an_import_inside_the_function_is_followed():
    for function in (imports_from_inside, imports_the_module_inside, imports_in_a_nested_function):
        assert reaches(function, trace.simulate), function.__name__
    assert not reaches(works_it_out, trace.simulate)


def test_every_reference_solution_is_an_answer_not_to_call():
    assert ex.solution_stride_prediction in answers(ex)
    assert any(reaches(calls_a_reference_solution, a) for a in answers(ex))
    assert not any(reaches(works_it_out, a) for a in answers(ex))


def takes_the_helper_as_a_default(stride, helper=ex.solution_stride_prediction):
    return helper(stride, 1.0)


def test_defaults_and_partials_are_followed():
    assert reaches(takes_the_helper_as_a_default, ex.solution_stride_prediction)
    assert reaches(lambda s, *, h=trace.simulate: h, trace.simulate)
    solution = ex.solution_stride_prediction
    assert reaches(functools.partial(solution, ceiling_gbps=1.0), solution)
    assert reaches(functools.partial(works_it_out, trace.simulate), trace.simulate)
    assert not reaches(functools.partial(works_it_out, 2), trace.simulate)
