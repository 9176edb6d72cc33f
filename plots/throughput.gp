# throughput.gp — per run: median tokens/s with its interquartile range
# and the threads its steps ran on (top); per recipe: the mean step time stacked by phase (bottom).
# Data and variables: fig_throughput.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

# about three tics per panel: 1, 2 or 5 times a power of ten
nice(x) = (x <= 0 ? 1 : (e = 10**floor(log10(x/3)), f = x/3/e, (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e))
stats datafile index 0 using ($6/1000) name "TOK" nooutput
# the tallest stacked bar: the sum of columns 3 .. 3+nph-1
nph = words(phases)
stack(k) = (s = 0, sum [j=3:k] (valid(j) ? column(j) : 0))
stats datafile index 1 using (stack(2 + nph)) name "MS" nooutput

# one colour per phase, Okabe-Ito, grey for what no phase claims
array PC[8] = ["#0072B2", "#D55E00", "#009E73", "#56B4E9", "#CC79A7", "#E69F00", "#F0E442", "#BBBBBB"]

height = height * 1.35
rotate = n > 4
bottom_in = rotate ? 0.55 : 0.3
set multiplot layout 2, 1 margins 0.7/3.5, 0.97, bottom_in/height, 1 - 0.08/height spacing 0, 0.35/height
set style fill solid 0.85 noborder
set boxwidth 0.7
set grid noxtics ytics
set xtics scale 0

set xrange [-0.6:n-0.4]
set ylabel "10^3 tokens/s" offset 0.5, 0
set yrange [0:TOK_max*1.05]
set ytics nice(TOK_max)
if (rotate) { set xtics rotate by 30 right }
# the IQR as a capped vertical line (vectors: gnuplot's errorbars blank out
# a disc around the median)
plot datafile index 0 using 1:($4/1000):(0.7):3:xtic(2) with boxes lc rgb variable notitle, \
     '' index 0 using 1:($5/1000):(0):(($6-$5)/1000) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using ($1-0.1):($5/1000):(0.2):(0) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using ($1-0.1):($6/1000):(0.2):(0) with vectors nohead lc rgb "#333333" lw 0.8 notitle, \
     '' index 0 using 1:($6/1000):($9 <= 0 ? "" : $8 == $9 ? sprintf("%d thr", $9) : sprintf("%d-%d thr", $8, $9)) \
        with labels offset 0, 0.5 font ",7" notitle

set xrange [-0.6:nrec-0.4+(nrec < 3 ? 1.2 : 0.9)]
set xtics norotate
set ylabel "ms per step" offset 0.5, 0
set yrange [0:MS_max*1.05]
set ytics nice(MS_max)
set key right top samplen 1 spacing 0.8 font ",7" width -2
# stacked: phase k's box spans [sum of phases < k, sum of phases <= k]
plot for [k=nph:1:-1] datafile index 1 using 1:(stack(2 + k)):(0.6):xtic(2) with boxes lc rgb PC[k] title word(phases, k)
unset multiplot
