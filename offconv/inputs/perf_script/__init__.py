"""The perf script input: ``header`` and ``frames`` read its lines, ``events`` makes a record
of each event, ``lines`` and ``blocks`` parse the text into records, ``summed`` sums it
without records, ``detect`` sniffs it. May import offconv.model and the other inputs."""
from offconv.model.formats import InputFormat
from offconv.inputs.perf_script.blocks import parse_blocks
from offconv.inputs.perf_script.detect import notes, sniff
from offconv.inputs.perf_script.lines import parse
from offconv.inputs.perf_script.summed import sum_blocks


FORMAT = InputFormat(name="perf-script", sniff=sniff, parse=parse, parse_blocks=parse_blocks,
                   sum_blocks=sum_blocks, notes=notes, description="perf script text (default fields and -F variants)")
