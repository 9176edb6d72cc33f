# gap.gp — relative training-loss gap to the baseline recipe over steps.
# Data and variables: fig_gap.c. The band is the 95% t-interval of the
# mean over seeds (paired with the baseline run of the same seed).
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

set xlabel "optimizer step"
set ylabel sprintf("loss gap to %s (%%)", baseline) noenhanced
set xrange [xlo:xhi]
if (exists("ylo")) { set yrange [ylo:yhi] }
# the axis follows the gaps once training has settled (fig_gap.c); earlier
# swings run off the scale, and the figure says so
if (exists("gaplo")) { set yrange [gaplo:gaphi] }
if (exists("clipped") && clipped) {
    set label 1 "first steps beyond the axis" at graph 0.02, graph 0.04 left font ",7" tc rgb "#666666"
}
# the key above the plot: a gap curve can run anywhere inside it
set key outside top center horizontal maxcols 2 width -1 font ",8"
if (!exists("gaplo")) { set offsets 0, 0, graph 0.05, graph 0.05 }

plot for [i=1:n] datafile index i-1 using 1:3:4 with filledcurves fs transparent solid 0.22 noborder lc rgb word(colors, i) notitle, \
     for [i=1:n] datafile index i-1 using 1:2 with lines lw 1.2 lc rgb word(colors, i) title word(titles, i) noenhanced, \
     0 with lines dt 2 lw 0.8 lc rgb basecolor title baseline." (= 0)" noenhanced, \
     keyentry with filledcurves fs transparent solid 0.22 noborder lc rgb "#555555" title (anyband ? "95% CI over seeds" : "")
