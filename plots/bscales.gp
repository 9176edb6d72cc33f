# bscales.gp — the block-scale histogram over training: a column per run, a
# row per (GEMM, pass); per logged step, each bin floor(log2 s) coloured by
# its share of the blocks (zero and NaN scales in rows of their own below).
# Data and variables: fig_bscales.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

top_in = 0.45      # the run labels above the panels
bottom_in = 0.5
left_in = 1.25     # the row labels and the log2 axis
right_in = 0.75    # the colour box
set multiplot layout nr, n rowsfirst margins left_in/width, 1 - right_in/width, bottom_in/height, 1 - top_in/height \
    spacing 0.18/width, 0.14/height
set xrange [xmin:xmax]
ybottom = hasnan ? ynan - 1 : haszero ? yzero - 1 : ymin - 1
set yrange [ybottom:ymax + 1]
ystep = ymax - ymin > 24 ? 10 : 5
yfirst = ystep*ceil((ymin + (clipped ? 3 : 0))/ystep)
set mxtics 2
unset grid
set palette defined (0 "#c6dbef", 0.35 "#6baed6", 0.7 "#2171b5", 1 "#08306b")
set cbrange [0:1]
set cbtics 0.25 font ",7"
set style fill solid 1.0 noborder
unset key
do for [r=1:nr] {
    do for [i=1:n] {
        if (r < nr) { set format x ""; unset xlabel } else { set format x "%g"; set xlabel "optimizer step" }
        set ytics yfirst, ystep font ",7"
        if (i == 1) {
            set format y "%g"
            if (clipped) { set ytics add (sprintf("≤%g", ymin) ymin) }
            if (haszero) { set ytics add ("0" yzero) }
            if (hasnan) { set ytics add ("NaN" ynan) }
            set ylabel word(rtitles, r)."\nlog_2 block scale" font ",7"
        } else {
            set format y ""
            unset ylabel
        }
        if (r == 1) {
            set label 1 word(titles, i) at graph 0, graph 1 offset 0, 0.55 left noenhanced font ",8"
        } else {
            unset label 1
        }
        if (r == 1 && i == n) {
            set colorbox user origin screen 1 - (right_in - 0.15)/width, screen 0.5 size screen 0.12/width, screen 0.35
            set label 2 "share of blocks" at screen 1 - (right_in - 0.05)/width, screen 0.87 left font ",7"
        } else {
            unset colorbox
            unset label 2
        }
        plot datafile index (i-1)*nr + r-1 using 1:2:($1-$4):($1+$4):($2-0.5):($2+0.5):3 \
             with boxxyerror lc palette notitle
    }
}
unset multiplot
